package dev.stitch.sidecar.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The deadlines and the cap of one client connection (security.md, "Limits"). Two handlers share
 * this state: {@link #socketSide()} before the HTTP codec sees raw bytes (a request has started) and
 * {@link #messageSide()} after it sees request heads, body ends and final responses. A fresh
 * connection must complete a request head within the header timeout; after a response, the next
 * request's first byte must come within the idle timeout and its head within the header timeout
 * from that byte; a request body may pause for at most the idle timeout. While a request is being
 * served there is no deadline: the engine call has its own timeout.
 */
final class ClientConnection {

    static final AttributeKey<ClientConnection> KEY = AttributeKey.valueOf("stitch.clientConnection");

    private final ConnectionLimits limits;
    private final ConnectionRegistry registry;
    private final ProxyStats stats;
    private final AtomicBoolean evicted = new AtomicBoolean();
    private volatile boolean busy;
    private volatile ConnectionRegistry.Admission admission;
    private Channel channel;
    // The fields below are confined to the connection's event loop.
    private int unanswered;
    private boolean readingHead;
    private boolean readingBody;
    private boolean informational;
    private long deadlineNanos;
    private String deadlineReason;
    private ScheduledFuture<?> check;
    private long checkDueNanos;

    ClientConnection(ConnectionLimits limits, ConnectionRegistry registry, ProxyStats stats) {
        this.limits = limits;
        this.registry = registry;
        this.stats = stats;
    }

    /** The state of {@code channel}'s connection, or null for a channel the proxy did not accept. */
    static ClientConnection of(Channel channel) {
        return channel.attr(KEY).get();
    }

    /** Whether this connection was admitted over the cap and may only reach sidecar routes. */
    boolean reserved() {
        return admission == ConnectionRegistry.Admission.RESERVED;
    }

    /** Whether a request is in progress (read by the registry from other threads). */
    boolean busy() {
        return busy;
    }

    /** Closes the connection to make room for a new one; at most once. */
    void evict() {
        if (evicted.compareAndSet(false, true)) {
            stats.connectionClosed("evicted");
            channel.close();
        }
    }

    /** The handler placed before the HTTP codec. */
    ChannelHandler socketSide() {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                channel = ctx.channel();
                channel.attr(KEY).set(ClientConnection.this);
                admission = registry.admit(ClientConnection.this);
                if (admission == ConnectionRegistry.Admission.REFUSED) {
                    stats.connectionClosed("refused");
                    ctx.close();
                    return;
                }
                readingHead = true;
                arm(limits.headerTimeout(), "header_timeout");
                ctx.fireChannelActive();
            }

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof ByteBuf b && b.isReadable()) {
                    if (readingBody) {
                        arm(limits.idleTimeout(), "idle_timeout");
                    } else if (unanswered == 0 && !readingHead) {
                        readingHead = true;
                        arm(limits.headerTimeout(), "header_timeout");
                    }
                }
                ctx.fireChannelRead(msg);
            }

            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                disarm();
                if (check != null) {
                    check.cancel(false);
                }
                ConnectionRegistry.Admission a = admission;
                if (a != null && a != ConnectionRegistry.Admission.REFUSED) {
                    registry.closed(ClientConnection.this, a);
                }
                ctx.fireChannelInactive();
            }
        };
    }

    /** The handler placed right after the HTTP codec. */
    ChannelHandler messageSide() {
        return new ChannelDuplexHandler() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof HttpRequest) {
                    unanswered++;
                    busy = true;
                    readingHead = false;
                    readingBody = true;
                    arm(limits.idleTimeout(), "idle_timeout");
                }
                if (msg instanceof LastHttpContent) {
                    readingBody = false;
                    disarm();
                }
                ctx.fireChannelRead(msg);
            }

            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                if (msg instanceof HttpResponse r) {
                    informational = r.status().codeClass() == HttpStatusClass.INFORMATIONAL;
                }
                if (msg instanceof LastHttpContent && !informational && unanswered > 0) {
                    responseEnded();
                }
                ctx.write(msg, promise);
            }
        };
    }

    private void responseEnded() {
        unanswered--;
        if (unanswered == 0 && !readingBody) {
            busy = false;
            registry.becameIdle(this);
            arm(limits.idleTimeout(), "idle_timeout");
        }
    }

    private void arm(Duration timeout, String reason) {
        long now = System.nanoTime();
        deadlineNanos = now + timeout.toNanos();
        deadlineReason = reason;
        if (check == null || checkDueNanos > deadlineNanos) {
            if (check != null) {
                check.cancel(false);
            }
            schedule(now, timeout.toNanos());
        }
    }

    private void disarm() {
        deadlineNanos = 0;
    }

    private void schedule(long now, long delayNanos) {
        checkDueNanos = now + delayNanos;
        check = channel.eventLoop().schedule(this::expireIfDue, delayNanos, TimeUnit.NANOSECONDS);
    }

    // One scheduled check per connection, pushed back when the deadline moved, instead of a timer per read.
    private void expireIfDue() {
        check = null;
        if (deadlineNanos == 0 || !channel.isActive()) {
            return;
        }
        long now = System.nanoTime();
        long left = deadlineNanos - now;
        if (left > 0) {
            schedule(now, left);
            return;
        }
        deadlineNanos = 0;
        stats.connectionClosed(deadlineReason);
        channel.close();
    }
}
