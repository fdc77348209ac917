package dev.stitch.refengine;

import static dev.stitch.refengine.ReferenceEngine.NODES;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The response to one generation request, fed by its generations on the connection's event loop.
 * A streaming response lets its generations make a token only while the channel is writable, so a
 * client that stops reading pauses them instead of piling events up in memory (docs/protocol/sync-and-engines.md §7.4).
 */
final class GenerationResponse implements Generation.Sink {
    /** The route family, which decides the JSON shapes. */
    enum Kind { GENERATE, COMPLETION, CHAT }

    private final ReferenceEngine engine;
    private final ChannelHandlerContext ctx;
    private final Kind kind;
    private final boolean batch;
    private final boolean stream;
    private final boolean keepAlive;
    private final Consumer<GenerationResponse> whenComplete;
    private final List<Generation> generations = new ArrayList<>();
    private final long created = System.currentTimeMillis() / 1000;
    private int remaining;
    private boolean abandoned;

    /** {@code whenComplete} runs on the event loop once the whole response has been handed to Netty. */
    GenerationResponse(ReferenceEngine engine, ChannelHandlerContext ctx, Kind kind, boolean batch, boolean stream,
                       boolean keepAlive, Consumer<GenerationResponse> whenComplete) {
        this.engine = engine;
        this.ctx = ctx;
        this.kind = kind;
        this.batch = batch;
        this.stream = stream;
        this.keepAlive = keepAlive;
        this.whenComplete = whenComplete;
    }

    void add(Generation g) {
        generations.add(g);
    }

    void begin() {
        remaining = generations.size();
        if (stream) {
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
            head.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
            head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            if (!keepAlive) {
                head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            }
            ctx.writeAndFlush(head);
        }
        if (generations.isEmpty()) {
            complete();
            return;
        }
        for (Generation g : List.copyOf(generations)) {
            g.start();
        }
    }

    /** The client went away: like SGLang, stop generating for it. */
    void abandon() {
        abandoned = true;
        generations.forEach(g -> g.abort("client disconnected"));
    }

    /** The channel drained below its low water mark: held generations go on. */
    void writable() {
        generations.forEach(Generation::proceed);
    }

    @Override
    public boolean readyForToken(Generation g) {
        return !abandoned && (!stream || ctx.channel().isWritable());
    }

    @Override
    public void onToken(Generation g) {
        if (stream && !abandoned) {
            event(chunk(g, false));
        }
    }

    @Override
    public void onFinish(Generation g) {
        if (stream && !abandoned) {
            event(chunk(g, true));
        }
        if (--remaining == 0) {
            complete();
        }
    }

    private void complete() {
        whenComplete.accept(this);
        if (abandoned) {
            return;
        }
        if (stream) {
            event("[DONE]");
            var f = ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
            if (!keepAlive) {
                f.addListener(ChannelFutureListener.CLOSE);
            }
            return;
        }
        JsonNode body;
        if (kind == Kind.GENERATE) {
            if (batch) {
                ArrayNode a = NODES.arrayNode();
                generations.forEach(g -> a.add(generateObject(g, true)));
                body = a;
            } else {
                body = generateObject(generations.getFirst(), true);
            }
        } else {
            body = openAiObject();
        }
        EngineHandler.send(engine, ctx, keepAlive, HttpResponseStatus.OK, body);
    }

    private void event(Object payload) {
        String data = payload instanceof String s ? s : payload.toString();
        ByteBuf bytes = Unpooled.copiedBuffer("data: " + data + "\n\n", StandardCharsets.UTF_8);
        int size = bytes.readableBytes();
        engine.queued(ctx.writeAndFlush(new DefaultHttpContent(bytes)), size);
    }

    private JsonNode chunk(Generation g, boolean last) {
        if (kind == Kind.GENERATE) {
            ObjectNode o = generateObject(g, last);
            if (batch) {
                o.put("index", g.index());
            }
            return o;
        }
        ObjectNode o = NODES.objectNode();
        o.put("id", (kind == Kind.CHAT ? "chatcmpl-" : "cmpl-") + g.rid());
        o.put("object", kind == Kind.CHAT ? "chat.completion.chunk" : "text_completion");
        o.put("created", created);
        o.put("model", "stitch-reference");
        ObjectNode choice = o.putArray("choices").addObject();
        choice.put("index", g.index());
        String piece = g.takeNewText();
        if (kind == Kind.CHAT) {
            ObjectNode delta = choice.putObject("delta");
            delta.put("role", "assistant");
            delta.put("content", piece);
        } else {
            choice.put("text", piece);
        }
        choice.putNull("logprobs");
        if (last) {
            choice.put("finish_reason", g.finishType());
        } else {
            choice.putNull("finish_reason");
        }
        return o;
    }

    private ObjectNode generateObject(Generation g, boolean withFinish) {
        ObjectNode o = NODES.objectNode();
        o.put("text", g.text());
        ArrayNode ids = o.putArray("output_ids");
        g.outputIds().forEach(ids::add);
        ObjectNode meta = o.putObject("meta_info");
        meta.put("id", g.rid());
        if (withFinish && g.finished()) {
            ObjectNode fr = meta.putObject("finish_reason");
            fr.put("type", g.finishType());
            if (g.finishType().equals("length")) {
                fr.put("length", g.outputIds().size());
            } else if (g.finishMessage() != null) {
                fr.put("message", g.finishMessage());
            }
        } else {
            meta.putNull("finish_reason");
        }
        meta.put("prompt_tokens", g.promptTokens());
        meta.put("completion_tokens", g.outputIds().size());
        meta.put("cached_tokens", 0);
        ReferenceEngine.Snapshot s = g.snapshot();
        meta.put("weight_version", s == null ? engine.weightVersion() : s.label());
        meta.put("weights_digest", s == null ? engine.weightsDigest() : s.digest());
        meta.put("e2e_latency", g.elapsedSeconds());
        return o;
    }

    private ObjectNode openAiObject() {
        Generation first = generations.getFirst();
        ObjectNode o = NODES.objectNode();
        o.put("id", (kind == Kind.CHAT ? "chatcmpl-" : "cmpl-") + first.rid());
        o.put("object", kind == Kind.CHAT ? "chat.completion" : "text_completion");
        o.put("created", created);
        o.put("model", "stitch-reference");
        ArrayNode choices = o.putArray("choices");
        int prompt = 0;
        int completion = 0;
        for (Generation g : generations) {
            ObjectNode c = choices.addObject();
            c.put("index", g.index());
            if (kind == Kind.CHAT) {
                c.putObject("message").put("role", "assistant").put("content", g.text());
            } else {
                c.put("text", g.text());
            }
            c.putNull("logprobs");
            c.put("finish_reason", g.finishType());
            prompt += g.promptTokens();
            completion += g.outputIds().size();
        }
        ObjectNode usage = o.putObject("usage");
        usage.put("prompt_tokens", prompt);
        usage.put("completion_tokens", completion);
        usage.put("total_tokens", prompt + completion);
        ObjectNode md = o.putObject("metadata");
        md.put("weight_version", first.snapshot().label());
        md.put("weights_digest", first.snapshot().digest());
        return o;
    }
}
