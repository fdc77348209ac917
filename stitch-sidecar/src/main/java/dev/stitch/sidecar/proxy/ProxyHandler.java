package dev.stitch.sidecar.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.ExtraKey;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import dev.stitch.sync.Admission;
import dev.stitch.sync.Lease;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection of the proxy. Requests on a connection are handled one at a time (pipelined
 * ones wait in order); every step of an exchange, including the engine side, runs on this
 * connection's event loop, so exchange state needs no locking.
 */
final class ProxyHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ProxyHandler.class);
    private static final Set<String> REQUEST_SKIP = Set.of("host", "content-length", "expect");
    private static final Set<String> RESPONSE_SKIP = Set.of("content-length");
    private static final Duration ABORT_TIMEOUT = Duration.ofSeconds(10);
    private static final ObjectMapper JSON = new ObjectMapper(JsonObjectEditor.FACTORY);

    private final ProxyContext cx;
    private final ArrayDeque<FullHttpRequest> queued = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private Exchange current;
    private boolean closed;

    ProxyHandler(ProxyContext cx) {
        this.cx = cx;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof FullHttpRequest req)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (current != null) {
            queued.add(req);
            return;
        }
        begin(req);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        closed = true;
        FullHttpRequest q;
        while ((q = queued.poll()) != null) {
            q.release();
        }
        if (current != null) {
            current.clientGone();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        // A slow client throttles the engine stream instead of letting relayed chunks pile up in memory.
        if (current != null) {
            current.clientWritability(ctx.channel().isWritable());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof IOException)) {
            LOG.warn("proxy connection error: {}", cause.toString());
        }
        ctx.close();
    }

    private void begin(FullHttpRequest req) {
        Exchange ex = new Exchange(req);
        current = ex;
        try {
            ex.start();
        } finally {
            req.release();
        }
    }

    private void exchangeDone(Exchange ex, boolean keepAlive) {
        if (current != ex) {
            return;
        }
        current = null;
        if (!keepAlive) {
            // The final write closes the connection once flushed.
            return;
        }
        FullHttpRequest next = queued.poll();
        if (next != null && !closed) {
            begin(next);
        }
    }

    /** Phases of one request. */
    private enum Phase { ROUTING, ADMISSION, FORWARDING, BUFFERING, RELAYING, DONE }

    /** One request from arrival to the last byte of its response. */
    private final class Exchange implements UpstreamPool.Listener {
        private final String method;
        private final String uri;
        private final String route;
        private final String routeLabel;
        private final boolean versioned;
        private boolean keepAlive;
        private final boolean http11;
        private final boolean wantsTrailers;
        private final io.netty.handler.codec.http.HttpHeaders requestHeaders;
        private final long startedNanos = System.nanoTime();
        private final String debugId;
        private byte[] body;
        private String requestContentType;
        private Phase phase = Phase.ROUTING;
        private List<String> rids = List.of();
        private JsonObjectEditor editor;
        private ExtraKey.UserKey userKey;
        private CompletableFuture<Admission> admissionFuture;
        private Lease lease;
        private long startVersion = -1;
        private Channel upstream;
        private ScheduledFuture<?> timeout;
        private HttpResponse upstreamHead;
        private boolean upstreamKeepAlive;
        private boolean eventStream;
        private ByteArrayOutputStream buffered;
        private int status;

        Exchange(FullHttpRequest req) {
            this.method = req.method().name();
            this.uri = req.uri();
            this.route = ProxyServer.stripSlashes(ProxyBodyLimit.pathOf(uri));
            this.routeLabel = cx.routeLabel(route);
            this.versioned = cx.config.versionedRoutes().contains(route);
            this.keepAlive = HttpUtil.isKeepAlive(req);
            this.http11 = req.protocolVersion().equals(HttpVersion.HTTP_1_1);
            this.wantsTrailers = teTrailers(req);
            this.requestHeaders = req.headers().copy();
            this.body = ByteBufUtil.getBytes(req.content());
            this.requestContentType = req.headers().get(HttpHeaderNames.CONTENT_TYPE);
            this.debugId = req.headers().get("x-slime-request-id");
            if (!req.decoderResult().isSuccess()) {
                this.status = -1;
            }
        }

        void start() {
            cx.stats.started();
            if (cx.config.debugRequests()) {
                LOG.info("request start id={} {} /{}", debugId, method, route);
            }
            if (status == -1) {
                keepAlive = false;
                reject(HttpResponseStatus.BAD_REQUEST, "InvalidRequest",
                        ProxyErrors.invalidRequest("malformed HTTP request"), false);
                return;
            }
            if (ProxyServer.BLOCKED_ROUTES.contains(route)) {
                reject(HttpResponseStatus.FORBIDDEN, "RouteBlocked", ProxyErrors.routeBlocked(route), false);
                return;
            }
            if (ProxyServer.SIDECAR_ROUTES.contains(route)) {
                dispatchEndpoint();
                return;
            }
            boolean json = body.length > 0 && ProxyContext.isJson(requestContentType);
            JsonObjectEditor.Kind kind = null;
            if (json) {
                try {
                    if (firstNonBlank(body) == '{') {
                        editor = JsonObjectEditor.parse(body);
                        kind = JsonObjectEditor.Kind.OBJECT;
                    } else {
                        kind = JsonObjectEditor.validate(body);
                    }
                } catch (IOException e) {
                    reject(HttpResponseStatus.BAD_REQUEST, "InvalidRequest",
                            ProxyErrors.invalidRequest("malformed JSON body: " + firstLine(e.getMessage())), false);
                    return;
                }
            }
            if (!versioned) {
                if (editor != null && editor.member("weight_version") != null) {
                    editor.remove("weight_version");
                    body = editor.toBytes();
                }
                forward();
                return;
            }
            VersionConstraint constraint = VersionConstraint.NONE;
            if (editor != null && !prepareVersioned()) {
                return;
            }
            if (editor != null) {
                constraint = parsedConstraint;
            }
            phase = Phase.ADMISSION;
            admissionFuture = cx.admission.admit(constraint.exact(), constraint.min(), rids);
            admissionFuture.whenComplete((a, err) -> ctx.executor().execute(() -> admitted(a, err)));
        }

        private VersionConstraint parsedConstraint = VersionConstraint.NONE;

        /** Validates the constraint and extra_key, strips weight_version, injects rid; false once answered. */
        private boolean prepareVersioned() {
            JsonObjectEditor.Member wv = editor.member("weight_version");
            if (wv != null) {
                JsonNode node = tree(editor.rawValue(wv));
                VersionConstraint.ParseResult parsed = VersionConstraint.parse(node);
                if (parsed instanceof VersionConstraint.Invalid inv) {
                    reject(HttpResponseStatus.BAD_REQUEST, "InvalidWeightVersion",
                            ProxyErrors.invalidWeightVersion(inv.message()), false);
                    return false;
                }
                parsedConstraint = ((VersionConstraint.Valid) parsed).constraint();
            }
            JsonObjectEditor.Member ek = editor.member("extra_key");
            ExtraKey.UserKeyResult user = ExtraKey.user(ek == null ? null : tree(editor.rawValue(ek)));
            if (user instanceof ExtraKey.Invalid inv) {
                reject(HttpResponseStatus.BAD_REQUEST, "InvalidRequest", ProxyErrors.invalidRequest(inv.message()), false);
                return false;
            }
            userKey = (ExtraKey.UserKey) user;
            editor.remove("weight_version");
            JsonObjectEditor.Member rid = editor.member("rid");
            JsonNode ridNode = rid == null ? null : tree(editor.rawValue(rid));
            if (ridNode == null || ridNode.isNull()) {
                String fresh = newRid();
                editor.put("rid", JsonObjectEditor.quote(fresh));
                rids = List.of(fresh);
            } else if (ridNode.isArray()) {
                List<String> list = new ArrayList<>();
                ridNode.forEach(n -> {
                    if (!n.isNull()) {
                        list.add(n.isTextual() ? n.textValue() : n.toString());
                    }
                });
                rids = List.copyOf(list);
            } else {
                rids = List.of(ridNode.isTextual() ? ridNode.textValue() : ridNode.toString());
            }
            return true;
        }

        private void admitted(Admission a, Throwable err) {
            if (phase != Phase.ADMISSION) {
                if (a instanceof Admission.Admitted ad) {
                    ad.lease().release();
                }
                return;
            }
            if (err != null) {
                if (err instanceof CancellationException) {
                    return;
                }
                LOG.warn("admission failed: {}", err.toString());
                reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "EngineUnavailable", ProxyErrors.engineUnavailable(), true);
                return;
            }
            switch (a) {
                case Admission.Rejected r -> rejected(r);
                case Admission.Admitted ad -> {
                    lease = ad.lease();
                    startVersion = lease.startVersion();
                    lease.onPreempt(() -> ctx.executor().execute(this::preempted));
                    if (editor != null) {
                        JsonNode composed = userKey.compose(startVersion, lease.runId());
                        editor.put("extra_key", composed.toString().getBytes(StandardCharsets.UTF_8));
                        body = editor.toBytes();
                    }
                    forward();
                }
            }
        }

        private void rejected(Admission.Rejected r) {
            switch (r.reason()) {
                case NOT_READY -> {
                    notifyNotReady(r.target());
                    conflict(VersionConstraint.Verdict.NOT_READY, r);
                }
                case TOO_OLD -> conflict(VersionConstraint.Verdict.TOO_OLD, r);
                case ENGINE_UNAVAILABLE -> reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "EngineUnavailable",
                        ProxyErrors.engineUnavailable(), true);
            }
        }

        private void notifyNotReady(long target) {
            try {
                cx.endpoints.notReady(target);
            } catch (RuntimeException e) {
                LOG.warn("wake hint for version {} failed: {}", target, e.toString());
            }
        }

        private void conflict(VersionConstraint.Verdict verdict, Admission.Rejected r) {
            reject(HttpResponseStatus.CONFLICT, ProxyErrors.conflictType(verdict),
                    ProxyErrors.versionConflict(verdict, r.current(), r.target(), r.latest()), true);
        }

        private void dispatchEndpoint() {
            phase = Phase.FORWARDING;
            byte[] requestBody = body;
            CompletableFuture
                    .supplyAsync(() -> switch (route) {
                        case "health" -> cx.endpoints.health();
                        case "server_info" -> cx.endpoints.serverInfo();
                        case "get_weight_version" -> cx.endpoints.weightVersion();
                        case "rpc_sync_from_bulletin_board" -> cx.endpoints.rpcSync(requestBody);
                        case "wake" -> cx.endpoints.wake();
                        default -> cx.endpoints.metrics();
                    }, cx.endpointExecutor)
                    .whenComplete((resp, err) -> ctx.executor().execute(() -> {
                        if (phase == Phase.DONE) {
                            return;
                        }
                        if (err != null || resp == null) {
                            LOG.warn("/{} failed: {}", route, err == null ? "no response" : err.toString());
                            byte[] b = ("{\"error\":{\"type\":\"InternalError\",\"message\":"
                                    + new String(JsonObjectEditor.quote("/" + route + " failed"), StandardCharsets.UTF_8)
                                    + "}}").getBytes(StandardCharsets.UTF_8);
                            finish(ProxyContext.jsonResponse(HttpResponseStatus.INTERNAL_SERVER_ERROR, b, false));
                            return;
                        }
                        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                HttpResponseStatus.valueOf(resp.status()), Unpooled.wrappedBuffer(resp.body()));
                        r.headers().set(HttpHeaderNames.CONTENT_TYPE, resp.contentType());
                        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, resp.body().length);
                        finish(r);
                    }));
        }

        /** Sends the (rewritten) request to the engine on a pooled connection. */
        private void forward() {
            phase = Phase.FORWARDING;
            cx.pool.acquire(ctx.channel().eventLoop()).addListener(f -> {
                if (phase != Phase.FORWARDING) {
                    if (f.isSuccess()) {
                        cx.pool.release((Channel) f.getNow());
                    }
                    return;
                }
                if (!f.isSuccess()) {
                    LOG.debug("engine unreachable: {}", f.cause().toString());
                    reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "EngineUnavailable",
                            ProxyErrors.engineUnavailable(), true);
                    return;
                }
                upstream = (Channel) f.getNow();
                upstream.attr(UpstreamPool.LISTENER).set(this);
                FullHttpRequest out = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1,
                        io.netty.handler.codec.http.HttpMethod.valueOf(method),
                        cx.pool.basePath() + (uri.startsWith("/") ? uri : "/" + uri),
                        Unpooled.wrappedBuffer(body));
                ProxyContext.copyHeaders(requestHeaders, out.headers(), REQUEST_SKIP);
                out.headers().set(HttpHeaderNames.HOST, cx.pool.hostHeader());
                HttpUtil.setContentLength(out, body.length);
                timeout = ctx.executor().schedule(this::timedOut,
                        cx.config.upstreamTimeout().toMillis(), TimeUnit.MILLISECONDS);
                upstream.writeAndFlush(out).addListener(w -> {
                    if (!w.isSuccess() && phase == Phase.FORWARDING) {
                        upstreamBroken("cannot send the request to the engine: " + w.cause());
                    }
                });
            });
        }

        @Override
        public void onResponse(Channel ch, HttpObject msg) {
            if (ch != upstream || phase == Phase.DONE) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (!msg.decoderResult().isSuccess()) {
                ReferenceCountUtil.release(msg);
                upstreamBroken("the engine sent an unparseable response: " + msg.decoderResult().cause());
                return;
            }
            if (msg instanceof HttpResponse head) {
                if (head.status().code() == 100) {
                    return;
                }
                responseHead(head);
            }
            if (msg instanceof HttpContent content) {
                responseContent(content);
            }
        }

        private void responseHead(HttpResponse head) {
            upstreamHead = head;
            upstreamKeepAlive = HttpUtil.isKeepAlive(head);
            status = head.status().code();
            String type = ProxyContext.mediaType(head.headers().get(HttpHeaderNames.CONTENT_TYPE));
            eventStream = type.equals("text/event-stream");
            boolean sized = head.headers().contains(HttpHeaderNames.CONTENT_LENGTH);
            if (versioned && (type.equals("application/json") || (sized && !eventStream))) {
                // A complete body of known size can carry the end version in its headers.
                phase = Phase.BUFFERING;
                buffered = new ByteArrayOutputStream();
                return;
            }
            phase = Phase.RELAYING;
            HttpResponse out = new DefaultHttpResponse(HttpVersion.HTTP_1_1, head.status());
            ProxyContext.copyHeaders(head.headers(), out.headers(), RESPONSE_SKIP);
            boolean appendComment = versioned && eventStream && cx.config.streamEndComment();
            boolean trailer = versioned && wantsTrailers && http11;
            String length = head.headers().get(HttpHeaderNames.CONTENT_LENGTH);
            if (versioned) {
                stampHeaders(out, false, -1);
            }
            if (status == 204 || status == 304) {
                out.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
            } else if (length != null && !appendComment && !trailer) {
                out.headers().set(HttpHeaderNames.CONTENT_LENGTH, length);
            } else if (http11) {
                out.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                if (trailer) {
                    out.headers().set(HttpHeaderNames.TRAILER, ProxyContext.HEADER_END);
                }
            }
            connectionHeader(out);
            ctx.writeAndFlush(out);
        }

        private void responseContent(HttpContent content) {
            boolean last = content instanceof LastHttpContent;
            ByteBuf data = content.content();
            if (phase == Phase.BUFFERING) {
                byte[] chunk = new byte[data.readableBytes()];
                data.readBytes(chunk);
                buffered.writeBytes(chunk);
                content.release();
                if (last) {
                    finishBuffered();
                }
                return;
            }
            if (!last) {
                ctx.writeAndFlush(new DefaultHttpContent(data));
                return;
            }
            if (data.isReadable()) {
                ctx.write(new DefaultHttpContent(data));
            } else {
                content.release();
            }
            long end = releaseLease();
            if (versioned && eventStream && cx.config.streamEndComment()) {
                ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer(
                        ": " + ProxyContext.HEADER_END + "=" + end + "\n\n", StandardCharsets.US_ASCII)));
            }
            LastHttpContent tail = new DefaultLastHttpContent();
            if (versioned && wantsTrailers && http11) {
                tail.trailingHeaders().set(ProxyContext.HEADER_END, Long.toString(end));
            }
            releaseUpstream();
            complete(tail, status);
        }

        private void finishBuffered() {
            byte[] raw = buffered.toByteArray();
            byte[] stamped;
            long end = releaseLease();
            try {
                stamped = stampBody(raw, end);
            } catch (IOException e) {
                releaseUpstream();
                phase = Phase.FORWARDING;
                reject(HttpResponseStatus.BAD_GATEWAY, "EngineUnavailable",
                        ProxyErrors.engineBroken("the engine returned malformed JSON: " + firstLine(e.getMessage())), true);
                return;
            }
            FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, upstreamHead.status(),
                    Unpooled.wrappedBuffer(stamped));
            ProxyContext.copyHeaders(upstreamHead.headers(), out.headers(), RESPONSE_SKIP);
            stampHeaders(out, true, end);
            out.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, stamped.length);
            releaseUpstream();
            finish(out);
        }

        /** Stamps a JSON response body per board-and-sidecar.md 4.5; arrays and scalars pass unchanged. */
        private byte[] stampBody(byte[] raw, long end) throws IOException {
            if (raw.length == 0) {
                return raw;
            }
            if (!ProxyContext.isJson(upstreamHead.headers().get(HttpHeaderNames.CONTENT_TYPE))) {
                return raw;
            }
            if (firstNonBlank(raw) != '{') {
                JsonObjectEditor.validate(raw);
                return raw;
            }
            JsonObjectEditor top = JsonObjectEditor.parse(raw);
            if (route.equals("generate")) {
                JsonObjectEditor.Member meta = top.member("meta_info");
                if (meta == null) {
                    String obj = "{\"weight_version\":\"" + startVersion + "\",\"weight_version_start\":" + startVersion
                            + ",\"weight_version_end\":" + end + "}";
                    top.append("meta_info", obj.getBytes(StandardCharsets.US_ASCII));
                } else if (top.firstByte(meta) == '{') {
                    JsonObjectEditor inner = JsonObjectEditor.parse(top.rawValue(meta));
                    inner.put("weight_version", JsonObjectEditor.quote(Long.toString(startVersion)));
                    inner.put("weight_version_start", JsonObjectEditor.number(startVersion));
                    inner.put("weight_version_end", JsonObjectEditor.number(end));
                    top.put("meta_info", inner.toBytes());
                } else {
                    return raw;
                }
            } else {
                top.put("weight_version_start", JsonObjectEditor.number(startVersion));
                top.put("weight_version_end", JsonObjectEditor.number(end));
            }
            return top.toBytes();
        }

        private void stampHeaders(HttpResponse out, boolean withEnd, long end) {
            out.headers().set(ProxyContext.HEADER_START, Long.toString(startVersion));
            if (withEnd) {
                out.headers().set(ProxyContext.HEADER_END, Long.toString(end));
            }
            String run = lease == null ? null : lease.runId();
            if (run != null) {
                out.headers().set(ProxyContext.HEADER_RUN, run);
            }
        }

        @Override
        public void onClosed(Channel ch) {
            if (ch == upstream && phase != Phase.DONE) {
                upstreamBroken("the engine closed the connection before the response was complete");
            }
        }

        @Override
        public void onFailure(Channel ch, Throwable cause) {
            if (ch == upstream && phase != Phase.DONE) {
                upstreamBroken("the engine connection failed: " + cause);
            }
        }

        /** Connection to the engine broke mid-exchange: 502 if nothing was sent yet, else cut the client. */
        private void upstreamBroken(String why) {
            LOG.debug("upstream broken on /{}: {}", route, why);
            discardUpstream();
            if (phase == Phase.RELAYING) {
                abortClientStream(502);
                return;
            }
            reject(HttpResponseStatus.BAD_GATEWAY, "EngineUnavailable", ProxyErrors.engineBroken(why), true);
        }

        private void timedOut() {
            if (phase != Phase.FORWARDING && phase != Phase.BUFFERING && phase != Phase.RELAYING) {
                return;
            }
            sendAborts();
            discardUpstream();
            String msg = "the engine did not answer within " + cx.config.upstreamTimeout().toSeconds() + " s";
            if (phase == Phase.RELAYING) {
                abortClientStream(504);
                return;
            }
            reject(HttpResponseStatus.GATEWAY_TIMEOUT, "EngineTimeout", ProxyErrors.engineTimeout(msg), false);
        }

        /** A drain timed out while this request held its lease (board-and-sidecar.md 6.4). */
        private void preempted() {
            if (phase == Phase.DONE || lease == null) {
                return;
            }
            cx.stats.preempted();
            sendAborts();
            if (phase == Phase.RELAYING) {
                // The engine ends the stream after its abort chunk; the relay finishes normally.
                return;
            }
            discardUpstream();
            reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "RequestPreempted",
                    ProxyErrors.requestPreempted("request aborted: a weight update could not wait for it to finish"), true);
        }

        void clientWritability(boolean writable) {
            Channel ch = upstream;
            if (ch != null && phase == Phase.RELAYING) {
                ch.config().setAutoRead(writable);
            }
        }

        /** The client went away: withdraw from the gate or cancel upstream and abort by rid (499). */
        void clientGone() {
            if (phase == Phase.DONE) {
                return;
            }
            if (phase == Phase.ADMISSION) {
                admissionFuture.cancel(false);
            } else if (phase != Phase.ROUTING) {
                if (upstream != null) {
                    sendAborts();
                }
                discardUpstream();
            }
            status = 499;
            done(499);
            current = null;
        }

        private void sendAborts() {
            if (!versioned) {
                return;
            }
            for (String rid : rids) {
                cx.pool.abort(ctx.channel().eventLoop(), rid, ABORT_TIMEOUT);
            }
        }

        private void abortClientStream(int code) {
            releaseLease();
            done(code);
            ctx.close();
        }

        private void reject(HttpResponseStatus st, String type, byte[] errorBody, boolean retryAfter) {
            cx.stats.rejection(type);
            discardUpstream();
            finish(ProxyContext.jsonResponse(st, errorBody, retryAfter));
        }

        private void finish(FullHttpResponse response) {
            if (phase == Phase.DONE) {
                response.release();
                return;
            }
            connectionHeader(response);
            complete(response, response.status().code());
        }

        private void complete(Object last, int code) {
            releaseLease();
            done(code);
            boolean keep = keepAlive && !closed;
            if (closed) {
                ReferenceCountUtil.release(last);
                exchangeDone(this, false);
                return;
            }
            var f = ctx.writeAndFlush(last);
            if (!keep) {
                f.addListener(ChannelFutureListener.CLOSE);
            }
            exchangeDone(this, keep);
        }

        private void done(int code) {
            if (phase == Phase.DONE) {
                return;
            }
            phase = Phase.DONE;
            if (timeout != null) {
                timeout.cancel(false);
            }
            releaseLease();
            cx.stats.request(routeLabel, code);
            cx.stats.finished();
            if (cx.config.debugRequests()) {
                LOG.info("request end id={} /{} status={} start={} ms={}", debugId, route, code, startVersion,
                        (System.nanoTime() - startedNanos) / 1_000_000);
            }
        }

        private long releaseLease() {
            Lease l = lease;
            if (l == null) {
                return startVersion;
            }
            return l.release();
        }

        private void releaseUpstream() {
            Channel ch = upstream;
            upstream = null;
            if (ch == null) {
                return;
            }
            if (timeout != null) {
                timeout.cancel(false);
            }
            ch.config().setAutoRead(true);
            if (upstreamKeepAlive) {
                cx.pool.release(ch);
            } else {
                cx.pool.discard(ch);
            }
        }

        private void discardUpstream() {
            Channel ch = upstream;
            upstream = null;
            if (ch != null) {
                cx.pool.discard(ch);
            }
        }

        private void connectionHeader(HttpResponse r) {
            if (!keepAlive) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            } else if (!http11) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            }
        }
    }

    private static boolean teTrailers(FullHttpRequest req) {
        for (String te : req.headers().getAll(HttpHeaderNames.TE)) {
            for (String token : te.split(",")) {
                String t = token.trim().toLowerCase(Locale.ROOT);
                int semi = t.indexOf(';');
                if ((semi < 0 ? t : t.substring(0, semi).trim()).equals("trailers")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** 32 lowercase hex characters of randomness, like a UUID without dashes (no SecureRandom on the event loop). */
    static String newRid() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        String hi = Long.toHexString(r.nextLong());
        String lo = Long.toHexString(r.nextLong());
        return "0".repeat(16 - hi.length()) + hi + "0".repeat(16 - lo.length()) + lo;
    }

    private static JsonNode tree(byte[] raw) {
        try {
            return JSON.readTree(raw);
        } catch (IOException e) {
            // The editor has already validated the whole document, so a member value always parses.
            throw new IllegalStateException("validated JSON did not parse: " + e.getMessage(), e);
        }
    }

    private static byte firstNonBlank(byte[] b) {
        for (byte x : b) {
            if (x != ' ' && x != '\t' && x != '\r' && x != '\n') {
                return x;
            }
        }
        return 0;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
