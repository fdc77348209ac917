package dev.stitch.sidecar.proxy;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection of the proxy. Requests on a connection are handled one at a time (pipelined
 * ones wait in order), each as a {@link ProxyExchange}; every step of an exchange, including the
 * engine side, runs on this connection's event loop, so exchange state needs no locking.
 */
final class ProxyHandler extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ProxyHandler.class);

    private final ProxyContext cx;
    private final ArrayDeque<FullHttpRequest> queued = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private ProxyExchange current;
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
        if (current != null && current.clientGone()) {
            current = null;
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

    /** Whether the client connection has gone inactive. */
    boolean isClosed() {
        return closed;
    }

    /** Called by an exchange once its response is complete; starts the next pipelined request if any. */
    void exchangeDone(ProxyExchange ex, boolean keepAlive) {
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

    private void begin(FullHttpRequest req) {
        ProxyExchange ex = new ProxyExchange(this, cx, ctx, req);
        current = ex;
        try {
            ex.start();
        } finally {
            req.release();
        }
    }
}
