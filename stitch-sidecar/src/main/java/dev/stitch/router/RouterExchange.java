package dev.stitch.router;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.relay.Exchange;
import dev.stitch.relay.ExchangeQueue;
import dev.stitch.relay.RelayHeaders;
import dev.stitch.relay.UpstreamPool;
import dev.stitch.sidecar.proxy.RequestConstraint;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request at the router (docs/protocol/router.md §2): its own routes answered at once, anything else forwarded
 * to the replica the routing policy chose, on the data plane's pooled connections, and the answer relayed chunk by
 * chunk (streams included) with the serving replica named. A retryable 409/503 from a versioned route, or a
 * replica that cannot be reached, costs one re-route: the view that chose it was stale. Every step runs on the
 * client connection's event loop, so the exchange's state needs no locking.
 */
final class RouterExchange implements Exchange, UpstreamPool.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(RouterExchange.class);

    /** What every exchange of one router shares. */
    record Context(Fleet fleet, ReplicaUpstreams upstreams, RouterRoutes routes, RollingUpdatePolicy rolling,
                   RouterMetrics metrics, SessionTable sessions, RequestConstraint requests, long upstreamTimeoutMs,
                   FleetChangeWaiters waiters, long catchUpWaitMs) {
    }

    /** Phases of one exchange. */
    private enum Phase { ROUTING, WAITING, FORWARDING, REFUSED, RELAYING, DONE }

    private final ExchangeQueue queue;
    private final Context cx;
    private final ChannelHandlerContext ctx;
    private final String method;
    private final String target;
    private final HttpHeaders headers;
    private final byte[] body;
    private final boolean malformed;
    private final boolean http11;
    private final boolean wantsTrailers;
    private boolean keepAlive;
    private Phase phase = Phase.ROUTING;
    private RequestConstraint.Route routeBy;
    private String session;
    private Set<String> excluded;
    private int attempt;
    /** Until when a request whose version a replica is catching up to may wait for the view; 0 before routing. */
    private long catchUpDeadlineNanos;
    private boolean waitCounted;
    private RoutingDecision.Forward chosen;
    private ReplicaUpstreams.Upstream upstream;
    private Channel channel;
    private boolean upstreamKeepAlive;
    private ScheduledFuture<?> timeout;
    /** When the last piece of the relayed body arrived from the replica. */
    private long lastReadNanos;

    RouterExchange(ExchangeQueue queue, Context cx, ChannelHandlerContext ctx, FullHttpRequest req) {
        this.queue = queue;
        this.cx = cx;
        this.ctx = ctx;
        this.method = req.method().name();
        this.target = req.uri();
        this.headers = req.headers().copy();
        this.body = ByteBufUtil.getBytes(req.content());
        this.malformed = !req.decoderResult().isSuccess();
        this.http11 = req.protocolVersion().equals(HttpVersion.HTTP_1_1);
        this.keepAlive = HttpUtil.isKeepAlive(req);
        this.wantsTrailers = RelayHeaders.acceptsTrailers(headers);
    }

    @Override
    public void start() {
        if (malformed) {
            keepAlive = false;
            answer(RouterRoutes.Answer.json(400, ProxyErrors.invalidRequest("malformed HTTP request")));
            return;
        }
        RouterRoutes.Answer own = cx.routes().answer(method, target, body);
        if (own != null) {
            answer(own);
            return;
        }
        RequestConstraint.Reading reading = cx.requests().read(target, headers.get(HttpHeaderNames.CONTENT_TYPE), body);
        if (reading instanceof RequestConstraint.Refuse refuse) {
            cx.metrics().rejected(refuse.status(), refuse.type());
            answer(RouterRoutes.Answer.json(refuse.status(), refuse.body()));
            return;
        }
        routeBy = (RequestConstraint.Route) reading;
        if (routeBy.constraint().isExact()) {
            cx.rolling().pinnedRouted(routeBy.constraint().target(), System.currentTimeMillis());
        }
        session = headers.get(RouterRoutes.SESSION_HEADER);
        catchUpDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(cx.catchUpWaitMs());
        route();
    }

    /** Chooses a replica among those not yet tried and forwards, or answers for the fleet. */
    private void route() {
        List<ReplicaView> views = cx.routes().loadedSnapshot();
        if (excluded != null) {
            views = views.stream().filter(v -> !excluded.contains(v.url())).toList();
        }
        RoutingDecision decision = RoutingPolicy.choose(views, routeBy.constraint(), cx.sessions().lastReplica(session));
        if (decision instanceof RoutingDecision.Reject reject) {
            long left = catchUpDeadlineNanos - System.nanoTime();
            if (reject.status() == 409 && reject.retryAfter() && left > 0) {
                // A replica is catching up to this version, and the router hears of its commit one state answer
                // late: waiting for the view beats a 409 the client would retry anyway (router.md §2.4).
                if (!waitCounted) {
                    waitCounted = true;
                    cx.metrics().waited();
                }
                phase = Phase.WAITING;
                cx.waiters().await(ctx.executor(), TimeUnit.NANOSECONDS.toMillis(left) + 1, () -> {
                    if (phase == Phase.WAITING) {
                        phase = Phase.ROUTING;
                        route();
                    }
                });
                return;
            }
            cx.metrics().rejected(reject.status(), reject.reason());
            answer(new RouterRoutes.Answer(reject.status(), RouterRoutes.JSON_TYPE, reject.body(),
                    reject.retryAfter() ? Map.of("Retry-After", ProxyErrors.RETRY_AFTER_SECONDS) : Map.of()));
            return;
        }
        chosen = (RoutingDecision.Forward) decision;
        upstream = cx.upstreams().get(chosen.replica());
        if (upstream == null) {
            // it left the fleet since the snapshot
            retryElsewhere("left the fleet");
            return;
        }
        upstream.inflight().incrementAndGet();
        phase = Phase.FORWARDING;
        UpstreamPool pool = upstream.pool();
        pool.acquire(ctx.channel().eventLoop()).addListener(f -> {
            if (phase != Phase.FORWARDING) {
                if (f.isSuccess()) {
                    pool.release((Channel) f.getNow());
                }
                return;
            }
            if (!f.isSuccess()) {
                // The view said routable but the sidecar does not accept connections: drain it now rather than
                // wait for its state poll to fail.
                ReplicaView v = cx.fleet().view(chosen.replica());
                if (v != null) {
                    cx.fleet().update(v.unreachable());
                }
                retryElsewhere("cannot connect: " + f.cause());
                return;
            }
            send((Channel) f.getNow());
        });
    }

    private void send(Channel ch) {
        channel = ch;
        UpstreamPool.attach(ch, this);
        FullHttpRequest out = upstream.pool().request(method, target, headers, body);
        if (wantsTrailers && http11) {
            // the sidecar's end-version trailer is passed through to a client that asked for trailers
            out.headers().set(HttpHeaderNames.TE, HttpHeaderValues.TRAILERS);
        }
        timeout = ctx.executor().schedule(this::timedOut, cx.upstreamTimeoutMs(), TimeUnit.MILLISECONDS);
        ch.writeAndFlush(out).addListener(w -> {
            if (!w.isSuccess() && ch == channel && phase == Phase.FORWARDING) {
                brokenBeforeHead("cannot send the request: " + w.cause());
            }
        });
    }

    @Override
    public void onHead(Channel ch, HttpResponse head) {
        if (ch == channel && phase != Phase.DONE) {
            responseHead(head);
        }
    }

    @Override
    public void onContent(Channel ch, HttpContent content) {
        if (ch != channel || phase == Phase.DONE) {
            content.release();
            return;
        }
        responseContent(content);
    }

    private void responseHead(HttpResponse head) {
        cancelTimeout();
        upstreamKeepAlive = HttpUtil.isKeepAlive(head);
        int status = head.status().code();
        if (attempt == 0 && routeBy.versioned() && (status == 409 || status == 503)) {
            // The sidecar moved since its last state answer (router.md §2.5): its refusal is read to the end so
            // the connection can be reused, then the request goes to one other replica.
            phase = Phase.REFUSED;
            return;
        }
        phase = Phase.RELAYING;
        lastReadNanos = System.nanoTime();
        upstream.relaying().add(this);
        cx.metrics().routed(chosen.affinity());
        cx.sessions().routed(session, chosen.replica());
        boolean sized = head.headers().contains(HttpHeaderNames.CONTENT_LENGTH);
        if (!http11 && !sized) {
            keepAlive = false; // an HTTP/1.0 client's body ends with the connection
        }
        boolean trailers = wantsTrailers && http11 && head.headers().contains(HttpHeaderNames.TRAILER);
        HttpResponse out = RelayHeaders.relayedHead(head, trailers, trailers ? head.headers().get(HttpHeaderNames.TRAILER)
                : null, keepAlive, http11);
        out.headers().set(RouterRoutes.REPLICA_HEADER, chosen.replica());
        ctx.write(out);
    }

    private void responseContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (phase == Phase.REFUSED) {
            content.release();
            if (last) {
                releaseUpstream();
                retryElsewhere("refused with a retryable status");
            }
            return;
        }
        lastReadNanos = System.nanoTime();
        if (!last) {
            ctx.writeAndFlush(new DefaultHttpContent(content.content()));
            return;
        }
        if (content.content().isReadable()) {
            ctx.write(new DefaultHttpContent(content.content().retain()));
        }
        LastHttpContent tail = new DefaultLastHttpContent();
        if (wantsTrailers && http11) {
            tail.trailingHeaders().set(((LastHttpContent) content).trailingHeaders());
        }
        content.release();
        releaseUpstream();
        complete(tail);
    }

    /** One more choice without the replica just tried, or the fleet's answer when that was the second try. */
    private void retryElsewhere(String why) {
        LOG.debug("{} {}: {}", chosen == null ? "replica" : chosen.replica(), target, why);
        endAttempt();
        if (attempt++ == 0) {
            cx.metrics().rerouted();
            if (excluded == null) {
                excluded = new HashSet<>();
            }
            if (chosen != null) {
                excluded.add(chosen.replica());
            }
            phase = Phase.ROUTING;
            route();
            return;
        }
        cx.metrics().rejected(503, "EngineUnavailable");
        answer(new RouterRoutes.Answer(503, RouterRoutes.JSON_TYPE, ProxyErrors.engineUnavailable(),
                Map.of("Retry-After", ProxyErrors.RETRY_AFTER_SECONDS)));
    }

    @Override
    public void onBroken(Channel ch, String why) {
        if (ch == channel && phase != Phase.DONE) {
            upstreamBroken(why);
        }
    }

    private void upstreamBroken(String why) {
        if (phase == Phase.RELAYING) {
            // Part of the answer is out: all the client can be told is that the connection ends.
            LOG.debug("{} broke mid-response: {}", chosen.replica(), why);
            discardUpstream();
            abortClient();
            return;
        }
        brokenBeforeHead(why);
    }

    private void brokenBeforeHead(String why) {
        discardUpstream();
        retryElsewhere(why);
    }

    private void timedOut() {
        if (phase != Phase.FORWARDING) {
            return;
        }
        discardUpstream();
        endAttempt();
        cx.metrics().rejected(504, "EngineTimeout");
        answer(RouterRoutes.Answer.json(504, ProxyErrors.engineTimeout(
                "the replica did not answer within " + cx.upstreamTimeoutMs() / 1000 + " s")));
    }

    /**
     * The replica's state polls fail (from any thread). A response still relayed from it is cut once it has been
     * silent for {@code silenceMs}: the client learns the stream ended instead of waiting on a dead host
     * (router.md §2.6). One that keeps sending is left alone, as is any once the replica answers polls again.
     */
    void replicaUnreachable(long silenceMs) {
        ctx.executor().execute(() -> checkSilence(silenceMs));
    }

    private void checkSilence(long silenceMs) {
        if (phase != Phase.RELAYING || chosen == null) {
            return;
        }
        ReplicaView v = cx.fleet().view(chosen.replica());
        if (v != null && v.reachable()) {
            return;
        }
        long quietFor = System.nanoTime() - lastReadNanos;
        long limit = TimeUnit.MILLISECONDS.toNanos(silenceMs);
        if (quietFor >= limit) {
            LOG.warn("cut a response from {}: the replica is unreachable and sent nothing for {} ms", chosen.replica(),
                    TimeUnit.NANOSECONDS.toMillis(quietFor));
            cx.metrics().cut();
            discardUpstream();
            abortClient();
            return;
        }
        ctx.executor().schedule(() -> checkSilence(silenceMs), limit - quietFor, TimeUnit.NANOSECONDS);
    }

    @Override
    public void clientWritability(boolean writable) {
        Channel ch = channel;
        if (ch != null && phase == Phase.RELAYING) {
            ch.config().setAutoRead(writable);
        }
    }

    @Override
    public boolean clientGone() {
        if (phase == Phase.DONE) {
            return false;
        }
        // Closing the replica connection tells its sidecar the client left; it aborts the engine's work.
        discardUpstream();
        endAttempt();
        phase = Phase.DONE;
        return true;
    }

    private void answer(RouterRoutes.Answer a) {
        FullHttpResponse rsp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(a.status()),
                Unpooled.wrappedBuffer(a.body()));
        rsp.headers().set(HttpHeaderNames.CONTENT_TYPE, a.contentType());
        a.headers().forEach((k, v) -> rsp.headers().set(k, v));
        HttpUtil.setContentLength(rsp, a.body().length);
        RelayHeaders.connection(rsp, keepAlive, http11);
        complete(rsp);
    }

    private void complete(Object last) {
        endAttempt();
        phase = Phase.DONE;
        if (queue.isClosed()) {
            ReferenceCountUtil.release(last);
            queue.exchangeDone(this, false);
            return;
        }
        var written = ctx.writeAndFlush(last);
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
        queue.exchangeDone(this, keepAlive);
    }

    private void abortClient() {
        endAttempt();
        phase = Phase.DONE;
        ctx.close();
    }

    /** The chosen replica no longer has this request in flight. */
    private void endAttempt() {
        cancelTimeout();
        if (upstream != null) {
            upstream.relaying().remove(this);
            upstream.inflight().decrementAndGet();
            upstream = null;
        }
    }

    private void cancelTimeout() {
        if (timeout != null) {
            timeout.cancel(false);
            timeout = null;
        }
    }

    private void releaseUpstream() {
        Channel ch = channel;
        channel = null;
        if (ch == null) {
            return;
        }
        if (upstream != null) {
            upstream.pool().finished(ch, upstreamKeepAlive);
        } else {
            discard(ch);
        }
    }

    private void discardUpstream() {
        Channel ch = channel;
        channel = null;
        if (ch != null) {
            discard(ch);
        }
    }

    private void discard(Channel ch) {
        if (upstream != null) {
            upstream.pool().discard(ch);
        } else {
            UpstreamPool.attach(ch, null);
            ch.close();
        }
    }
}
