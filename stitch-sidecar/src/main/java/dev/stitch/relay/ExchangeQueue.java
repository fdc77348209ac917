package dev.stitch.relay;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of one client connection, shared by the sidecar's proxy and the router. Requests on a
 * connection are answered one at a time and in order (pipelined ones wait here), each as an {@link Exchange};
 * every step of an exchange, its upstream side included, runs on this connection's event loop, so exchange
 * state needs no locking.
 */
public final class ExchangeQueue extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ExchangeQueue.class);

    /** Makes the exchange for one request; it copies what it needs, the queue releases the request after start. */
    @FunctionalInterface
    public interface Factory {
        Exchange open(ExchangeQueue queue, ChannelHandlerContext ctx, FullHttpRequest request);
    }

    private final Factory factory;
    private final ArrayDeque<FullHttpRequest> queued = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private Exchange current;
    private boolean closed;

    public ExchangeQueue(Factory factory) {
        this.factory = factory;
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
        // A slow client throttles the upstream stream instead of letting relayed chunks pile up in memory.
        if (current != null) {
            current.clientWritability(ctx.channel().isWritable());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof IOException)) {
            LOG.warn("client connection error: {}", cause.toString());
        }
        ctx.close();
    }

    /** Whether the client connection has gone inactive. */
    public boolean isClosed() {
        return closed;
    }

    /** Called by an exchange once its response is complete; starts the next pipelined request if any. */
    public void exchangeDone(Exchange ex, boolean keepAlive) {
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
        Exchange ex = factory.open(this, ctx, req);
        current = ex;
        try {
            ex.start();
        } finally {
            req.release();
        }
    }
}
