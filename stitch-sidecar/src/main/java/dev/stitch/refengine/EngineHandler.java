package dev.stitch.refengine;

import static dev.stitch.refengine.ReferenceEngine.JSON;
import static dev.stitch.refengine.ReferenceEngine.NODES;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.refengine.GenerationResponse.Kind;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** HTTP routes of the reference engine (docs/protocol/sync-and-engines.md §7.4), one instance per connection. */
final class EngineHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(EngineHandler.class);
    static final String DELTA_WITHOUT_FILES = "load_format='delta' requires non-empty ``files``";
    private static final int DEFAULT_MAX_TOKENS = 16;

    private final ReferenceEngine engine;
    private ChannelHandlerContext ctx;
    private GenerationResponse current;

    EngineHandler(ReferenceEngine engine) {
        this.engine = engine;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (current != null) {
            current.abandon();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && current != null) {
            current.writable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof IOException)) {
            LOG.warn("reference engine connection error: {}", cause.toString());
        }
        ctx.close();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        String body = req.content().toString(StandardCharsets.UTF_8);
        ReferenceEngine.Call call = new ReferenceEngine.Call(req.method().name(), req.uri(), body);
        engine.record(call);
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        JsonNode json;
        try {
            json = body.isBlank() ? NODES.objectNode() : JSON.readTree(body);
        } catch (IOException e) {
            send(keepAlive, HttpResponseStatus.BAD_REQUEST, detail("invalid JSON body: " + e.getMessage().lines().findFirst().orElse("")));
            return;
        }
        String route = call.route();
        try {
            switch (route) {
                case "generate" -> generate(json, keepAlive, Kind.GENERATE);
                case "v1/completions" -> generate(json, keepAlive, Kind.COMPLETION);
                case "v1/chat/completions" -> generate(json, keepAlive, Kind.CHAT);
                case "health", "health_generate" -> health(keepAlive);
                case "model_info", "get_model_info" -> send(keepAlive, HttpResponseStatus.OK, engine.modelInfo());
                case "server_info", "get_server_info" -> send(keepAlive, HttpResponseStatus.OK, serverInfo());
                case "get_weight_version" -> {
                    ObjectNode o = NODES.objectNode().put("weight_version", engine.weightVersion());
                    send(keepAlive, HttpResponseStatus.OK, o);
                }
                case "flush_cache" -> flushCache(keepAlive);
                case "pause_generation" -> pause(json, keepAlive);
                case "continue_generation" -> {
                    engine.resume();
                    send(keepAlive, HttpResponseStatus.OK, NODES.objectNode()
                            .put("message", "Generation continued successfully.").put("status", "ok"));
                }
                case "abort_request" -> abortRequest(json, keepAlive);
                case "update_weights_from_disk" -> updateWeightsFromDisk(json, keepAlive);
                case "update_weight_version" -> updateWeightVersion(json, keepAlive);
                case "debug/calls" -> {
                    ArrayNode a = NODES.arrayNode();
                    for (ReferenceEngine.Call c : engine.calls()) {
                        a.addObject().put("method", c.method()).put("path", c.path()).put("body", c.body());
                    }
                    send(keepAlive, HttpResponseStatus.OK, a);
                }
                default -> send(keepAlive, HttpResponseStatus.NOT_FOUND, NODES.objectNode().put("detail", "Not Found"));
            }
        } catch (BadRequest e) {
            send(keepAlive, HttpResponseStatus.BAD_REQUEST, detail(e.getMessage()));
        }
    }

    // ---- control routes ----

    private void health(boolean keepAlive) {
        Runnable answer = () -> ctx.executor().execute(() -> {
            if (engine.healthy()) {
                sendRaw(keepAlive, HttpResponseStatus.OK, "text/plain; charset=utf-8", new byte[0]);
            } else {
                sendRaw(keepAlive, HttpResponseStatus.SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                        "unhealthy: a weight load flushed the cache while requests were running\n".getBytes(StandardCharsets.UTF_8));
            }
        });
        if (engine.whenNotPaused(answer)) {
            answer.run();
        }
    }

    private ObjectNode serverInfo() {
        ObjectNode o = engine.modelInfo();
        o.put("version", "stitch-reference-engine");
        o.put("paused", engine.paused());
        o.put("healthy", engine.healthy());
        o.put("active_requests", engine.activeRequests());
        o.put("token_latency_ms", engine.config().tokenLatency().toNanos() / 1e6);
        o.put("max_generation_tokens", engine.config().maxGenerationTokens());
        o.put("queued_response_bytes", engine.queuedResponseBytes());
        return o;
    }

    private void flushCache(boolean keepAlive) {
        if (engine.busy()) {
            sendRaw(keepAlive, HttpResponseStatus.BAD_REQUEST, "text/plain; charset=utf-8",
                    "Cache not flushed: there are running or waiting requests.\n".getBytes(StandardCharsets.UTF_8));
        } else {
            sendRaw(keepAlive, HttpResponseStatus.OK, "text/plain; charset=utf-8",
                    "Cache flushed.\n".getBytes(StandardCharsets.UTF_8));
        }
    }

    private void pause(JsonNode json, boolean keepAlive) {
        String mode = json.path("mode").asText("abort");
        if (!mode.equals("abort") && !mode.equals("retract") && !mode.equals("in_place")) {
            throw new BadRequest("mode must be abort, retract or in_place, got " + mode);
        }
        engine.pause(mode);
        send(keepAlive, HttpResponseStatus.OK, NODES.objectNode()
                .put("message", "Generation paused successfully.").put("status", "ok"));
    }

    private void abortRequest(JsonNode json, boolean keepAlive) {
        Set<String> rids = new HashSet<>();
        JsonNode rid = json.path("rid");
        if (rid.isArray()) {
            rid.forEach(r -> rids.add(r.asText()));
        } else if (!rid.isMissingNode() && !rid.isNull()) {
            rids.add(rid.asText());
        }
        engine.abort(rids, json.path("abort_all").asBoolean(false));
        sendRaw(keepAlive, HttpResponseStatus.OK, "application/json", new byte[0]);
    }

    private void updateWeightVersion(JsonNode json, boolean keepAlive) {
        JsonNode v = json.path("new_version");
        if (v.isMissingNode() || v.isNull()) {
            throw new BadRequest("new_version is required");
        }
        if (json.path("abort_all_requests").asBoolean(true)) {
            engine.abort(Set.of(), true);
        }
        String label = v.asText();
        engine.label(label);
        send(keepAlive, HttpResponseStatus.OK, NODES.objectNode().put("success", true)
                .put("message", "Weight version updated to " + label + ".").put("new_version", label));
    }

    private void updateWeightsFromDisk(JsonNode json, boolean keepAlive) {
        JsonNode modelPathNode = json.path("model_path");
        if (!modelPathNode.isTextual() || modelPathNode.asText().isEmpty()) {
            failLoad(keepAlive, "model_path is required");
            return;
        }
        String loadFormat = json.path("load_format").isTextual() ? json.path("load_format").asText() : "auto";
        String label = json.hasNonNull("weight_version") ? json.path("weight_version").asText() : null;
        boolean flush = json.path("flush_cache").asBoolean(true);
        List<String> files = new ArrayList<>();
        json.path("files").forEach(f -> files.add(f.asText()));
        if (loadFormat.equals("delta") && files.isEmpty()) {
            failLoad(keepAlive, DELTA_WITHOUT_FILES);
            return;
        }
        if (flush && engine.busy()) {
            // SGLang's post-load flush asserts success and kills the scheduler when requests are live.
            engine.markUnhealthy();
            failLoad(keepAlive, "flush_cache failed after the weight update: requests are running; the engine is now unhealthy");
            return;
        }
        if (json.path("abort_all_requests").asBoolean(false)) {
            engine.abort(Set.of(), true);
        }
        Path dir = Path.of(modelPathNode.asText());
        engine.loader().execute(() -> {
            String message;
            boolean ok;
            try {
                if (loadFormat.equals("delta")) {
                    int n = SparseDeltaPatch.apply(engine, dir, files, label);
                    message = "Applied " + n + " delta file(s).";
                } else {
                    engine.reload(dir, label);
                    message = "Succeeded to update model weights.";
                }
                if (label != null) {
                    message += " Weight version updated to " + label + ".";
                }
                ok = true;
            } catch (IOException | RuntimeException e) {
                ok = false;
                message = (loadFormat.equals("delta") ? "Failed to apply delta update from disk: "
                        : "Failed to update weights: ") + e.getMessage();
            }
            boolean success = ok;
            String msg = message;
            ctx.executor().execute(() -> {
                if (success) {
                    send(keepAlive, HttpResponseStatus.OK, NODES.objectNode().put("success", true)
                            .put("message", msg).put("num_paused_requests", 0));
                } else {
                    failLoad(keepAlive, msg);
                }
            });
        });
    }

    private void failLoad(boolean keepAlive, String message) {
        send(keepAlive, HttpResponseStatus.BAD_REQUEST, NODES.objectNode().put("success", false).put("message", message));
    }

    // ---- generation routes ----

    private void generate(JsonNode json, boolean keepAlive, Kind kind) {
        if (!json.isObject()) {
            throw new BadRequest("request body must be a JSON object");
        }
        List<String> prompts = new ArrayList<>();
        List<Integer> promptTokens = new ArrayList<>();
        boolean batch = prompts(json, kind, prompts, promptTokens);
        // SGLang clamps max_new_tokens to what the context leaves; the configured cap plays that part here.
        int maxTokens = Math.min(maxTokens(json, kind), engine.config().maxGenerationTokens());
        boolean stream = json.path("stream").asBoolean(false);
        List<String> rids = rids(json.get("rid"), prompts.size(), batch);
        GenerationResponse r = new GenerationResponse(engine, ctx, kind, batch, stream, keepAlive, done -> {
            if (current == done) {
                current = null;
            }
        });
        for (int i = 0; i < prompts.size(); i++) {
            r.add(new Generation(engine, r, ctx.channel().eventLoop(), rids.get(i), prompts.get(i),
                    promptTokens.get(i), maxTokens, i));
        }
        current = r;
        r.begin();
    }

    private static boolean prompts(JsonNode json, Kind kind, List<String> prompts, List<Integer> tokens) {
        switch (kind) {
            case GENERATE -> {
                JsonNode text = json.get("text");
                JsonNode ids = json.get("input_ids");
                if (text != null && !text.isNull()) {
                    if (text.isArray()) {
                        text.forEach(t -> add(prompts, tokens, t.asText()));
                        return true;
                    }
                    add(prompts, tokens, text.asText());
                    return false;
                }
                if (ids != null && ids.isArray()) {
                    if (!ids.isEmpty() && ids.get(0).isArray()) {
                        ids.forEach(row -> addIds(prompts, tokens, row));
                        return true;
                    }
                    addIds(prompts, tokens, ids);
                    return false;
                }
                throw new BadRequest("either text or input_ids is required");
            }
            case COMPLETION -> {
                JsonNode p = json.get("prompt");
                if (p == null || p.isNull()) {
                    throw new BadRequest("prompt is required");
                }
                if (p.isArray() && !p.isEmpty() && p.get(0).isTextual()) {
                    p.forEach(t -> add(prompts, tokens, t.asText()));
                } else if (p.isArray()) {
                    addIds(prompts, tokens, p);
                } else {
                    add(prompts, tokens, p.asText());
                }
                return false;
            }
            default -> {
                JsonNode messages = json.get("messages");
                if (messages == null || !messages.isArray() || messages.isEmpty()) {
                    throw new BadRequest("messages must be a non-empty list");
                }
                StringBuilder sb = new StringBuilder();
                for (JsonNode m : messages) {
                    sb.append(m.path("role").asText()).append(": ").append(m.path("content").asText()).append('\n');
                }
                add(prompts, tokens, sb.toString());
                return false;
            }
        }
    }

    private static void add(List<String> prompts, List<Integer> tokens, String prompt) {
        prompts.add(prompt);
        tokens.add(prompt.isBlank() ? 0 : prompt.trim().split("\\s+").length);
    }

    private static void addIds(List<String> prompts, List<Integer> tokens, JsonNode ids) {
        prompts.add(ids.toString());
        tokens.add(ids.size());
    }

    private static int maxTokens(JsonNode json, Kind kind) {
        JsonNode n = switch (kind) {
            case GENERATE -> json.path("sampling_params").path("max_new_tokens");
            case COMPLETION -> json.path("max_tokens");
            case CHAT -> json.hasNonNull("max_completion_tokens") ? json.path("max_completion_tokens") : json.path("max_tokens");
        };
        if (n.isMissingNode() || n.isNull()) {
            return DEFAULT_MAX_TOKENS;
        }
        if (!n.canConvertToInt() || n.asInt() < 0) {
            throw new BadRequest("max tokens must be a non-negative integer");
        }
        return n.asInt();
    }

    private static List<String> rids(JsonNode rid, int n, boolean batch) {
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            if (rid != null && rid.isArray() && i < rid.size() && !rid.get(i).isNull()) {
                out.add(rid.get(i).asText());
            } else if (rid != null && rid.isTextual()) {
                out.add(batch ? rid.asText() + "_" + i : rid.asText());
            } else {
                out.add(UUID.randomUUID().toString().replace("-", ""));
            }
        }
        return out;
    }

    // ---- plumbing ----

    private static ObjectNode detail(String message) {
        return NODES.objectNode().put("error", message).put("detail", message);
    }

    private void send(boolean keepAlive, HttpResponseStatus status, JsonNode body) {
        send(engine, ctx, keepAlive, status, body);
    }

    private void sendRaw(boolean keepAlive, HttpResponseStatus status, String contentType, byte[] body) {
        sendRaw(engine, ctx, keepAlive, status, contentType, body);
    }

    static void send(ReferenceEngine engine, ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status,
                     JsonNode body) {
        byte[] bytes;
        try {
            bytes = JSON.writeValueAsBytes(body);
        } catch (IOException e) {
            throw ReferenceEngine.unchecked(e);
        }
        sendRaw(engine, ctx, keepAlive, status, "application/json", bytes);
    }

    static void sendRaw(ReferenceEngine engine, ChannelHandlerContext ctx, boolean keepAlive, HttpResponseStatus status,
                        String contentType, byte[] body) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        ChannelFuture written = ctx.writeAndFlush(r);
        engine.queued(written, body.length);
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** A request the engine refuses with 400. */
    private static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }
}
