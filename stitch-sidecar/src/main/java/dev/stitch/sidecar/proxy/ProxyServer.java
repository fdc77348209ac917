package dev.stitch.sidecar.proxy;

import dev.stitch.relay.ExchangeQueue;
import dev.stitch.relay.UpstreamPool;
import dev.stitch.sync.AdmissionControl;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The sidecar's data plane (docs/protocol/sidecar-http.md §4): an HTTP/1.1 server that gates versioned
 * requests through {@link AdmissionControl}, rewrites and forwards them to the engine over pooled
 * keep-alive connections, stamps responses with the versions that served them, relays streams chunk
 * by chunk, and answers the sidecar-owned routes through {@link SidecarEndpoints}.
 *
 * <p>{@link #start()} binds the port and returns at once, so the control plane can start it before
 * its first catch-up (readiness is the control plane's business).
 */
public final class ProxyServer implements AutoCloseable {

    /** The default listen address: loopback, so exposing the port is a deliberate {@code --host}. */
    public static final String DEFAULT_HOST = "127.0.0.1";

    /** The versioned routes of docs/protocol/sidecar-http.md §4.1 (default of {@code versioned_routes}). */
    public static final Set<String> DEFAULT_VERSIONED_ROUTES = Set.of("generate", "v1/chat/completions", "v1/completions");

    /** Routes answered by the control plane, never proxied and never gated. */
    public static final Set<String> SIDECAR_ROUTES = Set.of(
            "health", "server_info", "get_weight_version", "rpc_sync_from_bulletin_board", "wake", "metrics",
            "stitch/state");

    /** Routes that would let a client change the engine's weights or scheduling: 403 for any method. */
    public static final Set<String> BLOCKED_ROUTES = Set.of(
            "abort_request", "continue_generation", "destroy_weights_update_group", "flush_cache",
            "init_weights_update_group", "pause_generation", "post_process_weights", "pull_weights",
            "release_memory_occupation", "resume_memory_occupation", "stage_weight_update",
            "update_weight_version", "update_weights_from_cpu", "update_weights_from_disk",
            "update_weights_from_distributed", "update_weights_from_tensor");

    /**
     * Data-plane settings (docs/protocol/cli-and-config.md §8).
     *
     * @param host                   listen address
     * @param port                   listen port; 0 picks a free one (see {@link #port()})
     * @param upstream               the engine's base URL, {@code http://host:port}
     * @param versionedRoutes        routes (slashes stripped) that are gated and stamped
     * @param maxRequestBodyBytes    larger request bodies get 413
     * @param upstreamConnectTimeout connect timeout to the engine
     * @param upstreamTimeout        total time an engine call may take before 504
     * @param streamEndComment       append {@code : x-stitch-weight-version-end=<end>} to SSE streams
     * @param debugRequests          log one line at the start and end of every request
     * @param ioThreads              event-loop threads (connections and the engine client share them)
     * @param limits                 header and idle timeouts and the connection cap of client connections
     * @param control                token and rate limit of the state-changing sidecar routes
     */
    public record Config(String host, int port, URI upstream, Set<String> versionedRoutes, long maxRequestBodyBytes,
                         Duration upstreamConnectTimeout, Duration upstreamTimeout, boolean streamEndComment,
                         boolean debugRequests, int ioThreads, ConnectionLimits limits, ControlPolicy control) {

        public Config {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(limits, "limits");
            Objects.requireNonNull(control, "control");
            Objects.requireNonNull(upstream, "upstream");
            Objects.requireNonNull(upstreamConnectTimeout, "upstreamConnectTimeout");
            Objects.requireNonNull(upstreamTimeout, "upstreamTimeout");
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port must be 0..65535, got " + port);
            }
            if (maxRequestBodyBytes <= 0) {
                throw new IllegalArgumentException("max_request_body_bytes must be positive, got " + maxRequestBodyBytes);
            }
            if (ioThreads <= 0) {
                throw new IllegalArgumentException("ioThreads must be positive, got " + ioThreads);
            }
            Set<String> routes = new LinkedHashSet<>();
            for (String r : versionedRoutes) {
                String stripped = RouteTable.routeName(r);
                if (!stripped.isEmpty()) {
                    routes.add(stripped);
                }
            }
            versionedRoutes = Set.copyOf(routes);
        }

        /** The settings without connection limits and control policy, which take their defaults. */
        public Config(String host, int port, URI upstream, Set<String> versionedRoutes, long maxRequestBodyBytes,
                      Duration upstreamConnectTimeout, Duration upstreamTimeout, boolean streamEndComment,
                      boolean debugRequests, int ioThreads) {
            this(host, port, upstream, versionedRoutes, maxRequestBodyBytes, upstreamConnectTimeout, upstreamTimeout,
                    streamEndComment, debugRequests, ioThreads, ConnectionLimits.defaults(), ControlPolicy.defaults());
        }

        /**
         * Defaults of docs/protocol/cli-and-config.md §8 for this engine URL, listening on 127.0.0.1:8000: loopback
         * unless an operator opens the port on purpose (security.md, "Deployment").
         */
        public static Config defaults(URI upstream) {
            return new Config(DEFAULT_HOST, 8000, upstream, DEFAULT_VERSIONED_ROUTES, 64L << 20,
                    Duration.ofSeconds(10), Duration.ofSeconds(3600), true, false,
                    Math.max(1, Math.min(2, Runtime.getRuntime().availableProcessors())));
        }

        public Config withListen(String newHost, int newPort) {
            return new Config(newHost, newPort, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, ioThreads, limits, control);
        }

        public Config withVersionedRoutes(Set<String> routes) {
            return new Config(host, port, upstream, routes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, ioThreads, limits, control);
        }

        public Config withMaxRequestBodyBytes(long bytes) {
            return new Config(host, port, upstream, versionedRoutes, bytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, ioThreads, limits, control);
        }

        public Config withTimeouts(Duration connect, Duration total) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    connect, total, streamEndComment, debugRequests, ioThreads, limits, control);
        }

        public Config withStreamEndComment(boolean on) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, on, debugRequests, ioThreads, limits, control);
        }

        public Config withDebugRequests(boolean on) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, on, ioThreads, limits, control);
        }

        public Config withIoThreads(int threads) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, threads, limits, control);
        }

        public Config withLimits(ConnectionLimits newLimits) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, ioThreads, newLimits, control);
        }

        public Config withControl(ControlPolicy newControl) {
            return new Config(host, port, upstream, versionedRoutes, maxRequestBodyBytes,
                    upstreamConnectTimeout, upstreamTimeout, streamEndComment, debugRequests, ioThreads, limits, newControl);
        }

        /** Parses the comma-separated {@code versioned_routes} option. */
        public static Set<String> parseRoutes(String csv) {
            Set<String> out = new LinkedHashSet<>();
            for (String r : csv.split(",")) {
                String s = RouteTable.routeName(r);
                if (!s.isEmpty()) {
                    out.add(s);
                }
            }
            return out;
        }
    }

    private final Config config;
    private final AdmissionControl admission;
    private final SidecarEndpoints endpoints;
    private final ProxyStats stats = new ProxyStats();
    private EventLoopGroup group;
    private UpstreamPool pool;
    private ExecutorService endpointExecutor;
    private Channel serverChannel;
    /** Every accepted client connection, closed explicitly on {@link #close()}. */
    private ChannelGroup clients;

    public ProxyServer(Config config, AdmissionControl admission, SidecarEndpoints endpoints) {
        this.config = Objects.requireNonNull(config, "config");
        this.admission = Objects.requireNonNull(admission, "admission");
        this.endpoints = Objects.requireNonNull(endpoints, "endpoints");
    }

    public Config config() {
        return config;
    }

    /** The data plane's counters, for {@code /metrics}. */
    public ProxyStats stats() {
        return stats;
    }

    /**
     * Binds the listen port and returns; requests are served on Netty event loops from then on.
     *
     * @throws UncheckedIOException when the port cannot be bound (e.g. already in use)
     */
    public synchronized ProxyServer start() {
        if (serverChannel != null) {
            throw new IllegalStateException("already started");
        }
        group = EventLoops.group(config.ioThreads(), "stitch-proxy");
        pool = new UpstreamPool(config.upstream(), config.upstreamConnectTimeout());
        endpointExecutor = Executors.newVirtualThreadPerTaskExecutor();
        ProxyContext rules = new ProxyContext(config, admission, endpoints, stats, pool, endpointExecutor);
        ConnectionRegistry connections = new ConnectionRegistry(config.limits(), stats);
        ChannelGroup accepted = new DefaultChannelGroup("stitch-proxy-clients", GlobalEventExecutor.INSTANCE);
        clients = accepted;
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(EventLoops.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted.add(ch);
                        ClientConnection client = new ClientConnection(config.limits(), connections, stats);
                        ch.pipeline().addLast(client.socketSide());
                        ch.pipeline().addLast(new HttpServerCodec(8192, 65536, 65536));
                        ch.pipeline().addLast(client.messageSide());
                        ch.pipeline().addLast(new HttpServerExpectContinueHandler());
                        ch.pipeline().addLast(new ProxyBodyLimit(rules));
                        ch.pipeline().addLast(new ExchangeQueue((queue, ctx, req) -> new ProxyExchange(queue, rules, ctx, req)));
                    }
                });
        try {
            serverChannel = b.bind(new InetSocketAddress(config.host(), config.port())).sync().channel();
        } catch (Exception e) {
            shutdownResources();
            String msg = "cannot listen on " + config.host() + ":" + config.port() + ": " + e.getMessage();
            throw new UncheckedIOException(msg, e instanceof IOException io ? io : new IOException(e));
        }
        return this;
    }

    /** The bound port (useful with port 0). */
    public int port() {
        Channel ch = serverChannel;
        if (ch == null) {
            throw new IllegalStateException("not started");
        }
        return ((InetSocketAddress) ch.localAddress()).getPort();
    }

    /** Stops accepting, closes connections and the engine pool. Idempotent. */
    @Override
    public synchronized void close() {
        if (serverChannel != null) {
            serverChannel.close().awaitUninterruptibly();
            serverChannel = null;
        }
        if (clients != null) {
            // Closed here rather than left to the event loops' shutdown, which was seen to leave an accepted
            // connection open now and then: a client streaming from a closed sidecar must see its stream end.
            clients.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
            clients = null;
        }
        shutdownResources();
    }

    private void shutdownResources() {
        if (pool != null) {
            pool.close();
            pool = null;
        }
        if (group != null) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            group = null;
        }
        if (endpointExecutor != null) {
            endpointExecutor.shutdownNow();
            endpointExecutor = null;
        }
    }
}
