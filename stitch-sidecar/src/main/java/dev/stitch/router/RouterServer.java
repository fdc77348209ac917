package dev.stitch.router;

import dev.stitch.relay.ExchangeQueue;
import dev.stitch.sidecar.proxy.EventLoops;
import dev.stitch.sidecar.proxy.RequestConstraint;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * {@code stitch router}: a Netty HTTP front that sends each request to a replica whose sidecar can serve its
 * {@code weight_version} constraint now (docs/protocol/router.md). The sidecar behind still admits and stamps;
 * the router only chooses, so a stale view costs a sidecar 409 (answered by one re-route), never a wrong version.
 */
public final class RouterServer implements AutoCloseable {

    /**
     * Settings.
     *
     * @param host             the address to bind
     * @param port             the port to bind; 0 picks a free one
     * @param replicas         the initial members
     * @param replicasFile     a file of members, re-read on change, or null
     * @param versionedRoutes  the routes the sidecars gate (their {@code versioned_routes})
     * @param maxBodyBytes     the largest request body the router reads
     * @param upstreamTimeout  how long to wait for a sidecar's response head
     * @param longPollMs       the {@code timeout_ms} of each state poll
     * @param pollRetryMs      the pause after a failed state poll
     * @param sessionCapacity  how many session keys affinity remembers
     * @param rolling          the rolling-update policy answering commit permission
     * @param catchUpWait      how long a request may wait for a replica catching up to its version before 409
     * @param silentRelayCut   how long a response relayed from a replica whose polls fail may stay silent before
     *                         the client's connection is cut
     */
    public record Config(String host, int port, List<String> replicas, Path replicasFile, Set<String> versionedRoutes,
                         long maxBodyBytes, Duration upstreamTimeout, long longPollMs, long pollRetryMs,
                         int sessionCapacity, RollingUpdatePolicy rolling, Duration catchUpWait, Duration silentRelayCut) {

        /** The default of {@code --catch-up-wait}. */
        public static final Duration DEFAULT_CATCH_UP_WAIT = Duration.ofMillis(500);
        /** The default of {@code --silent-relay-cut}. */
        public static final Duration DEFAULT_SILENT_RELAY_CUT = Duration.ofSeconds(10);

        /** Settings with the default catch-up wait. */
        public Config(String host, int port, List<String> replicas, Path replicasFile, Set<String> versionedRoutes,
                      long maxBodyBytes, Duration upstreamTimeout, long longPollMs, long pollRetryMs,
                      int sessionCapacity, RollingUpdatePolicy rolling) {
            this(host, port, replicas, replicasFile, versionedRoutes, maxBodyBytes, upstreamTimeout, longPollMs,
                    pollRetryMs, sessionCapacity, rolling, DEFAULT_CATCH_UP_WAIT, DEFAULT_SILENT_RELAY_CUT);
        }

        /** The same settings with another silent-relay cut. */
        public Config withSilentRelayCut(Duration cut) {
            return new Config(host, port, replicas, replicasFile, versionedRoutes, maxBodyBytes, upstreamTimeout,
                    longPollMs, pollRetryMs, sessionCapacity, rolling, catchUpWait, cut);
        }

        public Config {
            Objects.requireNonNull(silentRelayCut, "silentRelayCut");
            if (silentRelayCut.isNegative() || silentRelayCut.isZero()) {
                throw new IllegalArgumentException("silentRelayCut must be positive");
            }
            Objects.requireNonNull(catchUpWait, "catchUpWait");
            if (catchUpWait.isNegative()) {
                throw new IllegalArgumentException("catchUpWait must not be negative");
            }
            Objects.requireNonNull(host, "host");
            replicas = List.copyOf(replicas);
            versionedRoutes = Set.copyOf(versionedRoutes);
            Objects.requireNonNull(rolling, "rolling");
            if (maxBodyBytes < 1 || maxBodyBytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("maxBodyBytes must be 1..2^31-1");
            }
        }
    }

    private final Fleet fleet;
    private final ReplicaStatePoller poller;
    private final ReplicaUpstreams upstreams;
    private final ReplicasFile replicasFile;
    private final RouterMetrics metrics = new RouterMetrics();
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Channel channel;
    private final Object changed = new Object();
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private final FleetChangeWaiters waiters = new FleetChangeWaiters();
    private long changes;

    /** The connect timeout to a sidecar; a replica that takes longer is drained and the request re-routed. */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);
    /** Event-loop threads: client connections and their replica connections share them. */
    private static final int IO_THREADS = Math.max(1, Math.min(2, Runtime.getRuntime().availableProcessors()));

    public RouterServer(Config config) throws IOException, InterruptedException {
        this.poller = new ReplicaStatePoller(config.longPollMs(), config.pollRetryMs());
        this.upstreams = new ReplicaUpstreams(CONNECT_TIMEOUT);
        this.fleet = new Fleet(url -> {
            upstreams.joined(url);
            poller.start(url);
        }, url -> {
            poller.stop(url);
            upstreams.left(url);
        });
        poller.attach(fleet, this::signalChange);
        poller.onUnreachable(url -> upstreams.unreachable(url, config.silentRelayCut().toMillis()));
        for (String r : config.replicas()) {
            fleet.add(r);
        }
        try {
            this.replicasFile = config.replicasFile() == null ? null : new ReplicasFile(config.replicasFile(), fleet, 1_000);
        } catch (IOException | RuntimeException e) {
            // the members already added have pollers running
            poller.close();
            upstreams.close();
            throw e;
        }
        RouterRoutes routes = new RouterRoutes(fleet, upstreams, config.rolling(), metrics);
        RouterExchange.Context cx = new RouterExchange.Context(fleet, upstreams, routes, config.rolling(), metrics,
                new SessionTable(config.sessionCapacity()), new RequestConstraint(config.versionedRoutes()),
                config.upstreamTimeout().toMillis(), waiters, config.catchUpWait().toMillis());
        this.boss = EventLoops.group(1, "stitch-router-accept");
        this.workers = EventLoops.group(IO_THREADS, "stitch-router-io");
        try {
            this.channel = new ServerBootstrap().group(boss, workers).channel(EventLoops.serverChannel())
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(8192, 65536, 65536),
                                    new HttpServerExpectContinueHandler(),
                                    new HttpObjectAggregator((int) Math.min(Integer.MAX_VALUE - 8, config.maxBodyBytes())),
                                    new ExchangeQueue((queue, ctx, req) -> new RouterExchange(queue, cx, ctx, req)));
                        }
                    })
                    .bind(config.host(), config.port()).sync().channel();
        } catch (RuntimeException | InterruptedException e) {
            close();
            throw e;
        }
    }

    /** The bound address. */
    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    public Fleet fleet() {
        return fleet;
    }

    public RouterMetrics metrics() {
        return metrics;
    }

    private void signalChange() {
        waiters.changed();
        synchronized (changed) {
            changes++;
            changed.notifyAll();
        }
    }

    /**
     * Blocks until the fleet's views satisfy {@code condition}, re-checking after every state answer; for tests
     * and tools that must act on what the router knows rather than on a guess of time.
     */
    public void awaitFleet(java.util.function.Predicate<List<ReplicaView>> condition) throws InterruptedException {
        synchronized (changed) {
            while (!condition.test(fleet.snapshot())) {
                changed.wait(1_000);
            }
        }
    }

    /** Stops listening, polling and relaying; a second call does nothing. */
    @Override
    public void close() {
        if (closed.getAndSet(true)) {
            return;
        }
        if (replicasFile != null) {
            replicasFile.close();
        }
        poller.close();
        if (channel != null) {
            channel.close().syncUninterruptibly();
        }
        if (boss != null) {
            boss.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
        }
        if (workers != null) {
            workers.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
        }
        upstreams.close();
    }
}
