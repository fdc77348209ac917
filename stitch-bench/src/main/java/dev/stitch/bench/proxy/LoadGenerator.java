package dev.stitch.bench.proxy;

import dev.stitch.sidecar.proxy.EventLoops;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * HTTP load for the proxy benchmark over a fixed set of keep-alive connections, all on one event
 * loop. Open-loop runs send on a fixed schedule and measure latency from the scheduled send time,
 * so queueing behind a slow response is charged to the system under test (no coordinated
 * omission); closed-loop runs keep every connection busy back to back.
 */
public final class LoadGenerator implements AutoCloseable {

    /** Outcome of one run. */
    public record Result(long completed, long errors, double elapsedSeconds, long[] latenciesNanos) {
        public double percentileMillis(double p) {
            if (latenciesNanos.length == 0) {
                return Double.NaN;
            }
            int idx = (int) Math.ceil(p * latenciesNanos.length) - 1;
            return latenciesNanos[Math.max(0, Math.min(latenciesNanos.length - 1, idx))] / 1e6;
        }

        public double achievedRps() {
            return completed / elapsedSeconds;
        }
    }

    private final EventLoopGroup group = EventLoops.group(1, "stitch-bench-load");
    private final EventLoop loop = group.next();
    private final InetSocketAddress target;
    private final byte[] body;
    private final String path;
    private final List<Conn> connections = new ArrayList<>();

    public LoadGenerator(String host, int port, String path, byte[] body, int connectionCount) throws InterruptedException {
        this.target = new InetSocketAddress(host, port);
        this.path = path;
        this.body = body;
        Bootstrap b = new Bootstrap().group(loop).channel(EventLoops.clientChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(1 << 20));
                    }
                });
        for (int i = 0; i < connectionCount; i++) {
            Channel ch = b.connect(target).sync().channel();
            Conn c = new Conn(ch);
            ch.pipeline().addLast(c);
            connections.add(c);
        }
    }

    // All fields below are touched only on the event loop.
    private final ArrayDeque<Conn> idle = new ArrayDeque<>();
    private final ArrayDeque<Long> backlog = new ArrayDeque<>();
    private long[] latencies = new long[1 << 16];
    private int count;
    private long errors;
    private boolean closedLoop;
    private long stopAt;
    private int inFlight;
    private CountDownLatch drained;

    /** Sends at {@code rps} for {@code seconds}; waits for the stragglers (up to 30 s). */
    public Result openLoop(double rps, double seconds) throws InterruptedException {
        CountDownLatch done = begin(false, Long.MAX_VALUE);
        long total = Math.max(1, Math.round(rps * seconds));
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        double interval = 1e9 / rps;
        for (long i = 0; i < total; i++) {
            long due = start + (long) (i * interval);
            long wait;
            while ((wait = due - System.nanoTime()) > 0) {
                LockSupport.parkNanos(Math.min(wait, 200_000));
            }
            loop.execute(() -> submit(due));
        }
        loop.execute(() -> {
            stopAt = 0;
            checkDrained();
        });
        done.await(30, TimeUnit.SECONDS);
        return finish(start);
    }

    /** Keeps every connection busy for {@code seconds}. */
    public Result closedLoop(double seconds) throws InterruptedException {
        long start = System.nanoTime();
        CountDownLatch done = begin(true, start + (long) (seconds * 1e9));
        loop.execute(() -> {
            for (int i = 0; i < connections.size(); i++) {
                submit(System.nanoTime());
            }
        });
        done.await((long) (seconds * 1000) + 30_000, TimeUnit.MILLISECONDS);
        return finish(start);
    }

    private CountDownLatch begin(boolean closed, long stop) throws InterruptedException {
        CountDownLatch ready = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        loop.execute(() -> {
            idle.clear();
            idle.addAll(connections);
            backlog.clear();
            count = 0;
            errors = 0;
            inFlight = 0;
            closedLoop = closed;
            stopAt = stop;
            drained = done;
            ready.countDown();
        });
        ready.await();
        return done;
    }

    private Result finish(long start) throws InterruptedException {
        CountDownLatch read = new CountDownLatch(1);
        long[][] out = new long[1][];
        long[] stats = new long[2];
        long end = System.nanoTime();
        loop.execute(() -> {
            out[0] = Arrays.copyOf(latencies, count);
            stats[0] = count;
            stats[1] = errors;
            read.countDown();
        });
        read.await();
        Arrays.sort(out[0]);
        return new Result(stats[0], stats[1], (end - start) / 1e9, out[0]);
    }

    private void submit(long scheduled) {
        Conn c = idle.poll();
        if (c == null) {
            backlog.add(scheduled);
            return;
        }
        c.send(scheduled);
    }

    private void completed(Conn c, long scheduled, boolean ok) {
        long now = System.nanoTime();
        inFlight--;
        if (ok) {
            if (count == latencies.length) {
                latencies = Arrays.copyOf(latencies, count * 2);
            }
            latencies[count++] = now - scheduled;
        } else {
            errors++;
        }
        if (closedLoop) {
            if (now < stopAt && c.channel.isActive()) {
                c.send(System.nanoTime());
                return;
            }
            stopAt = 0;
        } else {
            Long next = backlog.poll();
            if (next != null && c.channel.isActive()) {
                c.send(next);
                return;
            }
        }
        idle.add(c);
        checkDrained();
    }

    private void checkDrained() {
        if (stopAt == 0 && inFlight == 0 && backlog.isEmpty() && drained != null) {
            drained.countDown();
            drained = null;
        }
    }

    /** One keep-alive connection carrying one request at a time. */
    private final class Conn extends SimpleChannelInboundHandler<FullHttpResponse> {
        final Channel channel;
        long scheduled;
        boolean busy;

        Conn(Channel channel) {
            this.channel = channel;
        }

        void send(long scheduledAt) {
            scheduled = scheduledAt;
            busy = true;
            inFlight++;
            ByteBuf content = Unpooled.wrappedBuffer(body);
            FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, path, content);
            req.headers().set(HttpHeaderNames.HOST, target.getHostString() + ":" + target.getPort());
            req.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            req.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
            channel.writeAndFlush(req).addListener(f -> {
                if (!f.isSuccess() && busy) {
                    busy = false;
                    completed(this, scheduled, false);
                }
            });
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse msg) {
            if (!busy) {
                return;
            }
            busy = false;
            completed(this, scheduled, msg.status().code() == 200);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (busy) {
                busy = false;
                completed(this, scheduled, false);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        for (Conn c : connections) {
            c.channel.close();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }
}
