package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import dev.stitch.relay.Exchange;
import dev.stitch.relay.ExchangeQueue;
import dev.stitch.relay.RelayHeaders;
import dev.stitch.relay.UpstreamPool;
import dev.stitch.sync.Admission;
import dev.stitch.sync.Lease;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request from arrival to the last byte of its response: admission, the engine call on a
 * pooled connection, relay or buffering of the answer, timeouts, preemption and disconnects. What
 * the request becomes is decided by {@link RequestRewrite} and what the response carries by
 * {@link ResponseStamper}; this class does the I/O. Every step runs on the client connection's
 * event loop, so its state needs no locking.
 */
final class ProxyExchange implements Exchange, UpstreamPool.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(ProxyExchange.class);
    private static final Duration ABORT_TIMEOUT = Duration.ofSeconds(10);

    /** Phases of one request. */
    private enum Phase { ROUTING, ADMISSION, FORWARDING, BUFFERING, HOLDING, RELAYING, DONE }

    private final ExchangeQueue connection;
    private final ProxyContext cx;
    private final ChannelHandlerContext ctx;
    private final String method;
    private final String uri;
    private final RouteTable.Route route;
    private final boolean versioned;
    private final boolean malformed;
    private boolean keepAlive;
    private final boolean http11;
    private final boolean wantsTrailers;
    private final HttpHeaders requestHeaders;
    private final long startedNanos = System.nanoTime();
    private final String debugId;
    private final String requestContentType;
    private byte[] body;
    /** The body as the client sent it; a body that differs was rewritten and is UTF-8 JSON. */
    private final byte[] clientBody;
    private Phase phase = Phase.ROUTING;
    private List<String> rids = List.of();
    private VersionedRequest versionedRequest;
    private CompletableFuture<Admission> admissionFuture;
    private Lease lease;
    private long startVersion = -1;
    private ResponseStamper stamper;
    private Channel upstream;
    private ScheduledFuture<?> timeout;
    private HttpResponse upstreamHead;
    private boolean upstreamKeepAlive;
    private boolean eventStream;
    private ByteArrayOutputStream buffered;
    private StreamLabelCheck labelCheck;
    private boolean chunkedRelay;
    private boolean sizedRelay;
    private int status;

    /** Copies what it needs from {@code req}; the caller keeps ownership of the request's buffer. */
    ProxyExchange(ExchangeQueue connection, ProxyContext cx, ChannelHandlerContext ctx, FullHttpRequest req) {
        this.connection = connection;
        this.cx = cx;
        this.ctx = ctx;
        this.method = req.method().name();
        this.uri = req.uri();
        this.route = cx.routes.classify(uri);
        this.versioned = route.kind() == RouteTable.Kind.VERSIONED;
        this.malformed = !req.decoderResult().isSuccess();
        this.keepAlive = HttpUtil.isKeepAlive(req);
        this.http11 = req.protocolVersion().equals(HttpVersion.HTTP_1_1);
        this.wantsTrailers = RelayHeaders.acceptsTrailers(req.headers());
        this.requestHeaders = req.headers().copy();
        this.body = ByteBufUtil.getBytes(req.content());
        this.clientBody = body;
        this.requestContentType = req.headers().get(HttpHeaderNames.CONTENT_TYPE);
        this.debugId = req.headers().get("x-slime-request-id");
    }

    @Override
    public void start() {
        cx.stats.started();
        if (cx.config.debugRequests()) {
            LOG.info("request start id={} {} /{}", debugId, method, route.name());
        }
        if (malformed) {
            keepAlive = false;
            reject(HttpResponseStatus.BAD_REQUEST, "InvalidRequest",
                    ProxyErrors.invalidRequest("malformed HTTP request"), false);
            return;
        }
        ClientConnection client = ClientConnection.of(ctx.channel());
        if (client != null && client.reserved()) {
            // A connection over the cap frees its slot after one answer; only sidecar routes get one.
            keepAlive = false;
            if (route.kind() != RouteTable.Kind.SIDECAR) {
                reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "TooManyConnections",
                        ProxyErrors.tooManyConnections(cx.config.limits().maxConnections()), true);
                return;
            }
        }
        switch (RequestRewrite.decide(route, requestContentType, body)) {
            case RequestRewrite.Answer a -> reject(HttpResponseStatus.valueOf(a.status()), a.rejectionType(), a.body(), false);
            case RequestRewrite.Endpoint e -> dispatchEndpoint();
            case RequestRewrite.Forward f -> {
                body = f.body();
                forward();
            }
            case RequestRewrite.Admit a -> admit(a.request());
        }
    }

    private void admit(VersionedRequest request) {
        versionedRequest = request;
        rids = request.rids();
        VersionConstraint constraint = request.constraint();
        phase = Phase.ADMISSION;
        admissionFuture = cx.admission.admit(constraint.exact(), constraint.min(), rids);
        admissionFuture.whenComplete((a, err) -> ctx.executor().execute(() -> admitted(a, err)));
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
                body = versionedRequest.forwardedBody(startVersion, lease.runId());
                stamper = new ResponseStamper(route.name(), startVersion, lease.runId());
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

    /** Answers a sidecar-owned route from the control plane, bypassing the gate. */
    private void dispatchEndpoint() {
        phase = Phase.FORWARDING;
        String name = route.name();
        ControlAccess.Refusal refusal = cx.controlAccess.check(name, requestHeaders.get(HttpHeaderNames.AUTHORIZATION));
        if (refusal != null) {
            cx.stats.rejection(refusal.type());
            finish(refusal.response());
            return;
        }
        ControlPlaneCall.call(cx.endpoints, name, queryOf(uri), body, cx.endpointExecutor)
                .whenComplete((resp, err) -> ctx.executor().execute(() -> {
                    if (phase == Phase.DONE) {
                        return;
                    }
                    if (err != null || resp == null) {
                        LOG.warn("/{} failed: {}", name, err == null ? "no response" : err.toString());
                        finish(ProxyMessages.endpointResponse(ControlPlaneCall.failure(name)));
                        return;
                    }
                    finish(ProxyMessages.endpointResponse(resp));
                }));
    }

    private static String queryOf(String target) {
        int q = target.indexOf('?');
        return q < 0 ? null : target.substring(q + 1);
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
            UpstreamPool.attach(upstream, this);
            if (body != clientBody) {
                // The rewrite produced UTF-8 (docs/protocol/sidecar-http.md §4.1): a declared UTF-16/32 charset would now lie.
                requestHeaders.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            }
            FullHttpRequest out = cx.pool.request(method, route.forwardTarget(uri), requestHeaders, body);
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
    public void onHead(Channel ch, HttpResponse head) {
        if (ch == upstream && phase != Phase.DONE) {
            responseHead(head);
        }
    }

    @Override
    public void onContent(Channel ch, HttpContent content) {
        if (ch != upstream || phase == Phase.DONE) {
            content.release();
            return;
        }
        responseContent(content);
    }

    private void responseHead(HttpResponse head) {
        upstreamHead = head;
        upstreamKeepAlive = HttpUtil.isKeepAlive(head);
        status = head.status().code();
        String contentType = head.headers().get(HttpHeaderNames.CONTENT_TYPE);
        eventStream = ResponseStamper.isEventStream(contentType);
        boolean sized = head.headers().contains(HttpHeaderNames.CONTENT_LENGTH);
        if (versioned && ResponseStamper.buffersWholeBody(contentType, sized)) {
            // A complete body of known size can carry the end version in its headers.
            phase = Phase.BUFFERING;
            buffered = new ByteArrayOutputStream();
            return;
        }
        if (versioned && eventStream) {
            // The head waits for the first event, so that an engine label contradicting the start stamp can
            // still be answered with a 503 instead of a false stamp (sidecar-http.md 4.6).
            labelCheck = new StreamLabelCheck(stamper);
            phase = Phase.HOLDING;
            buffered = new ByteArrayOutputStream();
            return;
        }
        phase = Phase.RELAYING;
        sendStreamHead();
        ctx.flush();
    }

    private void sendStreamHead() {
        boolean appendComment = versioned && eventStream && cx.config.streamEndComment();
        boolean trailer = versioned && wantsTrailers && http11;
        HttpResponse out = ProxyMessages.streamHead(upstreamHead, versioned ? stamper : null, appendComment, trailer,
                keepAlive, http11);
        chunkedRelay = HttpUtil.isTransferEncodingChunked(out);
        sizedRelay = HttpUtil.isContentLengthSet(out);
        ctx.write(out);
    }

    private void responseContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        ByteBuf data = content.content();
        if (phase == Phase.HOLDING) {
            hold(content, last);
            return;
        }
        if (labelCheck != null && data.isReadable()) {
            StreamLabelCheck.Verdict verdict = labelCheck.feed(ByteBufUtil.getBytes(data));
            if (verdict == StreamLabelCheck.Verdict.CONTRADICTS) {
                content.release();
                contradictedMidStream(labelCheck.contradiction());
                return;
            }
            if (verdict == StreamLabelCheck.Verdict.AGREES) {
                labelCheck = null;
            }
        }
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
        endRelay();
    }

    /**
     * A stream's bytes while its head is held: once the first event has shown the engine's label (or that
     * it carries none), the head and the held bytes go out and the relay continues.
     */
    private void hold(HttpContent content, boolean last) {
        byte[] chunk = ByteBufUtil.getBytes(content.content());
        content.release();
        buffered.writeBytes(chunk);
        StreamLabelCheck.Verdict verdict = labelCheck.feed(chunk);
        if (verdict == StreamLabelCheck.Verdict.CONTRADICTS) {
            sendAborts();
            engineRelabelled(labelCheck.contradiction());
            return;
        }
        if (verdict == StreamLabelCheck.Verdict.AGREES) {
            labelCheck = null;
        }
        if (verdict == StreamLabelCheck.Verdict.NO_EVENT_YET && !last
                && buffered.size() < StreamLabelCheck.MAX_EVENT_BYTES) {
            return;
        }
        phase = Phase.RELAYING;
        sendStreamHead();
        byte[] held = buffered.toByteArray();
        buffered = null;
        if (held.length > 0) {
            ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(held)));
        }
        if (last) {
            endRelay();
        } else {
            ctx.flush();
        }
    }

    /** The engine's stream ended: the end stamps follow its last byte. */
    private void endRelay() {
        long end = releaseLease();
        if (versioned && eventStream && cx.config.streamEndComment()) {
            ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(ResponseStamper.streamEndComment(end))));
        }
        LastHttpContent tail = new DefaultLastHttpContent();
        if (versioned && wantsTrailers && http11) {
            tail.trailingHeaders().set(ResponseStamper.HEADER_END, Long.toString(end));
        }
        releaseUpstream();
        complete(tail, status);
    }

    private void finishBuffered() {
        byte[] raw = buffered.toByteArray();
        byte[] stamped;
        long end = releaseLease();
        try {
            stamped = stamper.stampBody(upstreamHead.headers().get(HttpHeaderNames.CONTENT_TYPE), raw, end);
        } catch (ResponseStamper.LabelMismatch e) {
            releaseUpstream();
            phase = Phase.FORWARDING;
            engineRelabelled(e.getMessage());
            return;
        } catch (IOException e) {
            releaseUpstream();
            phase = Phase.FORWARDING;
            reject(HttpResponseStatus.BAD_GATEWAY, "EngineUnavailable",
                    ProxyErrors.engineBroken("the engine returned malformed JSON: " + JsonBody.firstLine(e.getMessage())),
                    true);
            return;
        }
        FullHttpResponse out = ProxyMessages.bufferedResponse(upstreamHead, stamped, stamper, end);
        releaseUpstream();
        finish(out);
    }

    /**
     * The engine's own label contradicts the stamp before anything went out: the engine restarted or was
     * reloaded behind the sidecar's back, so the request gets 503 and the sync worker probes at once.
     */
    private void engineRelabelled(String why) {
        LOG.debug("/{}: {}; answering 503", route.name(), why); // the sync worker logs the probe it starts
        suspectEngine(why);
        reject(HttpResponseStatus.SERVICE_UNAVAILABLE, "EngineUnavailable", ProxyErrors.engineUnavailable(), true);
    }

    /**
     * The same after the stream's head went out: the stream ends with an error event in place of the
     * end stamp, or is cut where its framing leaves no room for one.
     */
    private void contradictedMidStream(String why) {
        LOG.debug("/{}: {}; ending the stream with an error event", route.name(), why);
        sendAborts();
        discardUpstream();
        suspectEngine(why);
        cx.stats.rejection("EngineUnavailable");
        if (sizedRelay) {
            abortClientStream(503);
            return;
        }
        ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(
                ResponseStamper.streamErrorEvent(ProxyErrors.engineUnavailable()))));
        if (!chunkedRelay) {
            ctx.flush();
            abortClientStream(503); // close-delimited (HTTP/1.0): the close ends the body
            return;
        }
        complete(new DefaultLastHttpContent(), 503);
    }

    private void suspectEngine(String why) {
        try {
            cx.endpoints.engineSuspect(why);
        } catch (RuntimeException e) {
            LOG.warn("engine probe request failed: {}", e.toString());
        }
    }

    @Override
    public void onBroken(Channel ch, String why) {
        if (ch == upstream && phase != Phase.DONE) {
            upstreamBroken(why);
        }
    }

    /** Connection to the engine broke mid-exchange: 502 if nothing was sent yet, else cut the client. */
    private void upstreamBroken(String why) {
        LOG.debug("upstream broken on /{}: {}", route.name(), why);
        discardUpstream();
        if (phase == Phase.RELAYING) {
            abortClientStream(502);
            return;
        }
        reject(HttpResponseStatus.BAD_GATEWAY, "EngineUnavailable", ProxyErrors.engineBroken(why), true);
    }

    private void timedOut() {
        if (phase != Phase.FORWARDING && phase != Phase.BUFFERING && phase != Phase.HOLDING
                && phase != Phase.RELAYING) {
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

    /** A drain timed out while this request held its lease (docs/protocol/sync-and-engines.md §6.4). */
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

    /** The client's channel became writable or not: a slow client pauses reading from the engine. */
    @Override
    public void clientWritability(boolean writable) {
        Channel ch = upstream;
        if (ch != null && phase == Phase.RELAYING) {
            ch.config().setAutoRead(writable);
        }
    }

    /**
     * The client went away: withdraw from the gate or cancel upstream and abort by rid (499).
     *
     * @return false when the exchange had already finished
     */
    @Override
    public boolean clientGone() {
        if (phase == Phase.DONE) {
            return false;
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
        return true;
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
        finish(ProxyMessages.jsonResponse(st, errorBody, retryAfter));
    }

    private void finish(FullHttpResponse response) {
        if (phase == Phase.DONE) {
            response.release();
            return;
        }
        RelayHeaders.connection(response, keepAlive, http11);
        complete(response, response.status().code());
    }

    private void complete(Object last, int code) {
        releaseLease();
        done(code);
        boolean closed = connection.isClosed();
        boolean keep = keepAlive && !closed;
        if (closed) {
            ReferenceCountUtil.release(last);
            connection.exchangeDone(this, false);
            return;
        }
        var f = ctx.writeAndFlush(last);
        if (!keep) {
            f.addListener(ChannelFutureListener.CLOSE);
        }
        connection.exchangeDone(this, keep);
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
        cx.stats.request(route.label(), code);
        cx.stats.finished();
        if (cx.config.debugRequests()) {
            LOG.info("request end id={} /{} status={} start={} ms={}", debugId, route.name(), code, startVersion,
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
        cx.pool.finished(ch, upstreamKeepAlive);
    }

    private void discardUpstream() {
        Channel ch = upstream;
        upstream = null;
        if (ch != null) {
            cx.pool.discard(ch);
        }
    }
}
