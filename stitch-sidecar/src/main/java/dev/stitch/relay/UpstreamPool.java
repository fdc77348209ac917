package dev.stitch.relay;

import dev.stitch.protocol.CanonicalJson;
import dev.stitch.sidecar.proxy.EventLoops;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.pool.AbstractChannelPoolHandler;
import io.netty.channel.pool.ChannelHealthChecker;
import io.netty.channel.pool.SimpleChannelPool;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.AttributeKey;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keep-alive connections to one upstream (the sidecar's engine, or one replica of the router), one pool per
 * event loop so that a relayed exchange runs on a single thread end to end. Idle connections are closed before
 * the upstream's own keep-alive timeout (uvicorn: 5 s) would race a new request.
 */
public final class UpstreamPool implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UpstreamPool.class);
    private static final AttributeKey<Listener> LISTENER = AttributeKey.valueOf("stitch.upstream.listener");
    private static final int IDLE_CLOSE_S = 4;
    private static final Set<String> REQUEST_SKIP = Set.of("host", "content-length", "expect");

    /** Receives the events of the one exchange that currently owns a pooled channel. */
    public interface Listener {
        /** The response's status and headers; a {@code 100 Continue} is skipped. */
        void onHead(Channel ch, HttpResponse head);

        /** A piece of the body, the last one a {@link LastHttpContent}; the listener owns it. */
        void onContent(Channel ch, HttpContent content);

        /** The connection closed, failed or sent what does not parse before the exchange was released. */
        void onBroken(Channel ch, String why);
    }

    private final URI upstream;
    private final InetSocketAddress address;
    private final String hostHeader;
    private final Duration connectTimeout;
    /** The client TLS context for an https upstream (the JDK's trust store), or null. */
    private final SslContext tls;
    private final Map<EventLoop, SimpleChannelPool> pools = new ConcurrentHashMap<>();

    public UpstreamPool(URI upstream, Duration connectTimeout) {
        boolean tls = "https".equalsIgnoreCase(upstream.getScheme());
        if (upstream.getHost() == null || !tls && !"http".equalsIgnoreCase(upstream.getScheme())) {
            throw new IllegalArgumentException("upstream URL must be http(s)://host:port, got " + upstream);
        }
        this.upstream = upstream;
        int port = upstream.getPort() < 0 ? (tls ? 443 : 80) : upstream.getPort();
        this.tls = tls ? clientTls() : null;
        this.address = InetSocketAddress.createUnresolved(upstream.getHost(), port);
        this.hostHeader = upstream.getHost() + (upstream.getPort() < 0 ? "" : ":" + port);
        this.connectTimeout = connectTimeout;
    }

    public String hostHeader() {
        return hostHeader;
    }

    /** The path prefix of the upstream URL (without trailing slash), prepended to forwarded paths. */
    public String basePath() {
        String p = upstream.getRawPath();
        if (p == null || p.isEmpty() || p.equals("/")) {
            return "";
        }
        return p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
    }

    /**
     * The request to the upstream: the client's method, target (under the upstream's base path) and end-to-end
     * headers, with the upstream's {@code Host} and the length of {@code body}.
     */
    public FullHttpRequest request(String method, String target, HttpHeaders clientHeaders, byte[] body) {
        FullHttpRequest out = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.valueOf(method),
                basePath() + (target.startsWith("/") ? target : "/" + target), Unpooled.wrappedBuffer(body));
        RelayHeaders.copy(clientHeaders, out.headers(), REQUEST_SKIP);
        out.headers().set(HttpHeaderNames.HOST, hostHeader);
        HttpUtil.setContentLength(out, body.length);
        return out;
    }

    /** Acquires a connected channel on this event loop; the future fails when the engine is unreachable. */
    public Future<Channel> acquire(EventLoop loop) {
        return pools.computeIfAbsent(loop, this::newPool).acquire();
    }

    /** Makes {@code listener} the receiver of a pooled channel's events until it is released or discarded. */
    public static void attach(Channel ch, Listener listener) {
        ch.attr(LISTENER).set(listener);
    }

    /** Returns a channel whose exchange has completed; a closed channel is dropped by the pool. */
    public void release(Channel ch) {
        ch.attr(LISTENER).set(null);
        SimpleChannelPool pool = pools.get(ch.eventLoop());
        if (pool != null) {
            pool.release(ch);
        } else {
            ch.close();
        }
    }

    /**
     * A response was read to its end: the channel goes back to the pool when the upstream keeps the connection,
     * else it is closed. Reading is switched back on, since a relay may have paused it for a slow client.
     */
    public void finished(Channel ch, boolean keepAlive) {
        ch.config().setAutoRead(true);
        if (keepAlive) {
            release(ch);
        } else {
            discard(ch);
        }
    }

    /** Closes a channel mid-exchange (cancel, cut, timeout) and gives its pool slot back. */
    public void discard(Channel ch) {
        ch.attr(LISTENER).set(null);
        ch.close();
        SimpleChannelPool pool = pools.get(ch.eventLoop());
        if (pool != null) {
            pool.release(ch);
        }
    }

    /**
     * Best-effort {@code POST /abort_request {"rid": rid}} (docs/protocol/sidecar-http.md §4.7); failures are
     * logged, the call gives up after {@code timeout}.
     */
    public void abort(EventLoop loop, String rid, Duration timeout) {
        StringBuilder json = new StringBuilder("{\"rid\":");
        CanonicalJson.appendString(json, rid);
        byte[] body = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
        FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
                basePath() + "/abort_request", Unpooled.wrappedBuffer(body));
        req.headers().set(HttpHeaderNames.HOST, hostHeader);
        req.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        HttpUtil.setContentLength(req, body.length);
        acquire(loop).addListener(f -> {
            if (!f.isSuccess()) {
                ReferenceCountUtil.release(req);
                LOG.warn("abort_request for rid {} not sent: {}", rid, f.cause().toString());
                return;
            }
            Channel ch = (Channel) f.getNow();
            var timer = ch.eventLoop().schedule(() -> {
                LOG.warn("abort_request for rid {} timed out", rid);
                discard(ch);
            }, timeout.toMillis(), TimeUnit.MILLISECONDS);
            ch.attr(LISTENER).set(new Listener() {
                private boolean keepAlive = true;

                @Override
                public void onHead(Channel c, HttpResponse r) {
                    keepAlive = HttpUtil.isKeepAlive(r);
                    if (r.status().code() >= 300) {
                        LOG.warn("abort_request for rid {} answered {}", rid, r.status());
                    }
                }

                @Override
                public void onContent(Channel c, HttpContent content) {
                    content.release();
                    if (content instanceof LastHttpContent) {
                        timer.cancel(false);
                        finished(c, keepAlive);
                    }
                }

                @Override
                public void onBroken(Channel c, String why) {
                    timer.cancel(false);
                    LOG.warn("abort_request for rid {} failed: {}", rid, why);
                    discard(c);
                }
            });
            ch.writeAndFlush(req).addListener(w -> {
                if (!w.isSuccess()) {
                    timer.cancel(false);
                    LOG.warn("abort_request for rid {} not sent: {}", rid, w.cause().toString());
                    discard(ch);
                }
            });
        });
    }

    private SimpleChannelPool newPool(EventLoop loop) {
        Bootstrap b = new Bootstrap()
                .group((EventLoopGroup) loop)
                .channel(EventLoops.clientChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()))
                .remoteAddress(address);
        return new SimpleChannelPool(b, new AbstractChannelPoolHandler() {
            @Override
            public void channelCreated(Channel ch) {
                if (tls != null) {
                    ch.pipeline().addLast(tls.newHandler(ch.alloc(), address.getHostString(), address.getPort()));
                }
                ch.pipeline().addLast(new IdleStateHandler(0, 0, IDLE_CLOSE_S, TimeUnit.SECONDS));
                ch.pipeline().addLast(new HttpClientCodec(4096, 65536, 65536));
                ch.pipeline().addLast(new Relay());
            }
        }, ChannelHealthChecker.ACTIVE, true, false);
    }

    private static SslContext clientTls() {
        try {
            return SslContextBuilder.forClient().build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot set up TLS for the upstream: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        pools.values().forEach(SimpleChannelPool::close);
        pools.clear();
    }

    /** Hands every decoded response object to the channel's current listener. */
    private static final class Relay extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Listener l = ctx.channel().attr(LISTENER).get();
            if (l == null || !(msg instanceof HttpObject h)) {
                // Bytes after an exchange completed: the connection is out of step, never reuse it.
                ReferenceCountUtil.release(msg);
                ctx.close();
                return;
            }
            if (!h.decoderResult().isSuccess()) {
                ReferenceCountUtil.release(msg);
                l.onBroken(ctx.channel(), "the upstream sent an unparseable response: " + h.decoderResult().cause());
                return;
            }
            if (h instanceof HttpResponse head) {
                if (head.status().code() == 100) {
                    ReferenceCountUtil.release(msg);
                    return;
                }
                l.onHead(ctx.channel(), head);
            }
            if (h instanceof HttpContent content) {
                l.onContent(ctx.channel(), content);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Listener l = ctx.channel().attr(LISTENER).get();
            if (l != null) {
                l.onBroken(ctx.channel(), "the upstream closed the connection before the response was complete");
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent && ctx.channel().attr(LISTENER).get() == null) {
                ctx.close();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Listener l = ctx.channel().attr(LISTENER).get();
            if (l != null) {
                l.onBroken(ctx.channel(), "the upstream connection failed: " + cause);
            }
            ctx.close();
        }
    }
}
