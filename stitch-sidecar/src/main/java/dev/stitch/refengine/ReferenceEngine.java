package dev.stitch.refengine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.sidecar.proxy.EventLoops;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An SGLang-compatible inference server without a GPU (docs/protocol/sync-and-engines.md §7.4), for rehearsals,
 * tests, the demo and the proxy benchmark. It serves a safetensors checkpoint held in private memory;
 * its outputs are a deterministic function of the prompt and the {@code weights_digest} of the
 * weights it serves, so a test can prove which weights produced every response. Every request is
 * recorded ({@link #calls()}, {@code GET /debug/calls}).
 */
public final class ReferenceEngine implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final int MAX_RECORDED_CALLS = 10_000;
    /** Default cap on the tokens of one sequence, the context length of a mid-sized model. */
    public static final int DEFAULT_MAX_GENERATION_TOKENS = 32_768;
    /**
     * A connection turns unwritable above 128 KiB of unsent response and writable again below 32 KiB:
     * enough to keep a reading client's socket busy, little enough that a stalled one costs almost nothing.
     */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(32 << 10, 128 << 10);

    /**
     * Settings.
     *
     * @param modelPath    the checkpoint served at boot (a directory with one or more safetensors files)
     * @param host         listen address
     * @param port         listen port, 0 for any
     * @param tokenLatency time per generated token
     * @param ioThreads    event-loop threads
     * @param maxGenerationTokens cap on the tokens one sequence generates; larger requests are clamped
     */
    public record Config(Path modelPath, String host, int port, Duration tokenLatency, int ioThreads,
                         int maxGenerationTokens) {
        public Config {
            Objects.requireNonNull(modelPath, "modelPath");
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(tokenLatency, "tokenLatency");
            if (tokenLatency.isNegative()) {
                throw new IllegalArgumentException("token latency must not be negative");
            }
            if (ioThreads <= 0) {
                throw new IllegalArgumentException("ioThreads must be positive");
            }
            if (maxGenerationTokens <= 0) {
                throw new IllegalArgumentException("maxGenerationTokens must be positive, got " + maxGenerationTokens);
            }
        }

        /** Settings with the default generation cap. */
        public Config(Path modelPath, String host, int port, Duration tokenLatency, int ioThreads) {
            this(modelPath, host, port, tokenLatency, ioThreads, DEFAULT_MAX_GENERATION_TOKENS);
        }

        /** Loopback, any free port, no token latency, one event loop. */
        public static Config local(Path modelPath) {
            return new Config(modelPath, "127.0.0.1", 0, Duration.ZERO, 1);
        }

        public Config withTokenLatency(Duration latency) {
            return new Config(modelPath, host, port, latency, ioThreads, maxGenerationTokens);
        }

        public Config withListen(String newHost, int newPort) {
            return new Config(modelPath, newHost, newPort, tokenLatency, ioThreads, maxGenerationTokens);
        }

        public Config withMaxGenerationTokens(int cap) {
            return new Config(modelPath, host, port, tokenLatency, ioThreads, cap);
        }
    }

    /** One recorded request: method, path with query, request body as text. */
    public record Call(String method, String path, String body) {
        /** The body parsed as JSON; a {@code MissingNode} when it is empty or not JSON. */
        public JsonNode json() {
            try {
                return body.isEmpty() ? com.fasterxml.jackson.databind.node.MissingNode.getInstance() : JSON.readTree(body);
            } catch (IOException e) {
                return com.fasterxml.jackson.databind.node.MissingNode.getInstance();
            }
        }

        /** The route: path without query and without leading/trailing slashes. */
        public String route() {
            int q = path.indexOf('?');
            String p = q < 0 ? path : path.substring(0, q);
            int from = 0;
            int to = p.length();
            while (from < to && p.charAt(from) == '/') {
                from++;
            }
            while (to > from && p.charAt(to - 1) == '/') {
                to--;
            }
            return p.substring(from, to);
        }
    }

    private final Config config;
    /** Guards weights, label, health, pause state and the registries below. */
    final ReentrantLock lock = new ReentrantLock();
    private ReferenceWeights weights;
    private String modelPath;
    private String label = "default";
    private boolean healthy = true;
    private boolean paused;
    private final Set<Generation> active = new LinkedHashSet<>();
    private final List<Generation> suspended = new ArrayList<>();
    private final List<Runnable> pauseWaiters = new ArrayList<>();
    private final ArrayDeque<Call> calls = new ArrayDeque<>();
    private long totalCalls;
    private final AtomicLong queuedResponseBytes = new AtomicLong();
    private final LongAdder tokensGenerated = new LongAdder();
    private EventLoopGroup group;
    private ExecutorService loader;
    private volatile Thread loaderThread;
    private Channel serverChannel;

    public ReferenceEngine(Config config) {
        this.config = Objects.requireNonNull(config, "config");
    }

    /** Loads the checkpoint into private memory and binds the port. */
    public synchronized ReferenceEngine start() throws IOException {
        if (serverChannel != null) {
            throw new IllegalStateException("already started");
        }
        weights = ReferenceWeights.load(config.modelPath());
        modelPath = config.modelPath().toAbsolutePath().toString();
        group = EventLoops.group(config.ioThreads(), "stitch-ref-engine");
        loader = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "stitch-ref-engine-loader");
            loaderThread = t;
            t.setDaemon(true);
            return t;
        });
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(EventLoops.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec());
                        ch.pipeline().addLast(new HttpObjectAggregator(256 << 20));
                        ch.pipeline().addLast(new EngineHandler(ReferenceEngine.this));
                    }
                });
        try {
            serverChannel = b.bind(new InetSocketAddress(config.host(), config.port())).sync().channel();
        } catch (Exception e) {
            close();
            throw new IOException("cannot listen on " + config.host() + ":" + config.port() + ": " + e.getMessage(), e);
        }
        return this;
    }

    public Config config() {
        return config;
    }

    public int port() {
        Channel ch = serverChannel;
        if (ch == null) {
            throw new IllegalStateException("not started");
        }
        return ((InetSocketAddress) ch.localAddress()).getPort();
    }

    /** {@code http://host:port} of the running engine (loopback when bound to the wildcard). */
    public String url() {
        String h = config.host().equals("0.0.0.0") ? "127.0.0.1" : config.host();
        return "http://" + h + ":" + port();
    }

    /** The recorded requests, oldest first (the most recent 10 000). */
    public List<Call> calls() {
        synchronized (calls) {
            return List.copyOf(calls);
        }
    }

    /** Recorded requests to one route (slashes stripped), oldest first. */
    public List<Call> calls(String route) {
        List<Call> out = new ArrayList<>();
        for (Call c : calls()) {
            if (c.route().equals(route)) {
                out.add(c);
            }
        }
        return out;
    }

    /** Total requests received since start, including those dropped from {@link #calls()}. */
    public long callCount() {
        synchronized (calls) {
            return totalCalls;
        }
    }

    public void clearCalls() {
        synchronized (calls) {
            calls.clear();
        }
    }

    void record(Call call) {
        synchronized (calls) {
            totalCalls++;
            if (calls.size() == MAX_RECORDED_CALLS) {
                calls.pollFirst();
            }
            calls.addLast(call);
        }
    }

    /** The weights digest served right now ({@code "xxh3-128:<hex>"}). */
    public String weightsDigest() {
        lock.lock();
        try {
            return weights.digest();
        } finally {
            lock.unlock();
        }
    }

    /** The engine's weight-version label ({@code "default"} until a load sets one). */
    public String weightVersion() {
        lock.lock();
        try {
            return label;
        } finally {
            lock.unlock();
        }
    }

    /** False after a {@code flush_cache: true} load arrived while requests were running. */
    public boolean healthy() {
        lock.lock();
        try {
            return healthy;
        } finally {
            lock.unlock();
        }
    }

    public boolean paused() {
        lock.lock();
        try {
            return paused;
        } finally {
            lock.unlock();
        }
    }

    /** Generations currently running (including suspended ones). */
    public int activeRequests() {
        lock.lock();
        try {
            return active.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Response bytes handed to Netty and not yet written to a socket, summed over all connections.
     * A client that stops reading holds at most about one write-buffer high water mark of them.
     */
    public long queuedResponseBytes() {
        return queuedResponseBytes.get();
    }

    /** Tokens generated since start, over all sequences; it stands still while every stream is held. */
    public long tokensGenerated() {
        return tokensGenerated.sum();
    }

    // ---- state used by EngineHandler and Generation ----

    /** Counts {@code bytes} of response body as queued until {@code write} completes or fails. */
    void queued(ChannelFuture write, int bytes) {
        queuedResponseBytes.addAndGet(bytes);
        write.addListener(f -> queuedResponseBytes.addAndGet(-bytes));
    }

    void tokenGenerated() {
        tokensGenerated.increment();
    }

    record Snapshot(String label, String digest) {
    }

    Snapshot snapshot() {
        lock.lock();
        try {
            return new Snapshot(label, weights.digest());
        } finally {
            lock.unlock();
        }
    }

    String modelPath() {
        lock.lock();
        try {
            return modelPath;
        } finally {
            lock.unlock();
        }
    }

    ExecutorService loader() {
        return loader;
    }

    /**
     * CPU time the weight-loading thread (reloads and in-place delta applies) has used so far, in
     * nanoseconds, or -1 before its first load or where the JVM cannot measure it; lets a benchmark
     * cost a load without counting the time it waited for a core.
     */
    public long loaderCpuNanos() {
        Thread t = loaderThread;
        return t == null ? -1 : ManagementFactory.getThreadMXBean().getThreadCpuTime(t.threadId());
    }

    /** Registers a generation; returns false (and queues {@code whenResumed}) while paused. */
    boolean register(Generation g, Runnable whenResumed) {
        lock.lock();
        try {
            if (paused) {
                pauseWaiters.add(whenResumed);
                return false;
            }
            active.add(g);
            return true;
        } finally {
            lock.unlock();
        }
    }

    void unregister(Generation g) {
        lock.lock();
        try {
            active.remove(g);
            suspended.remove(g);
        } finally {
            lock.unlock();
        }
    }

    /** True when the generation must stop stepping now (engine paused); it is resumed by continue. */
    boolean suspendIfPaused(Generation g) {
        lock.lock();
        try {
            if (paused) {
                // A held stream that drains while paused comes back here; it is resumed once.
                if (!suspended.contains(g)) {
                    suspended.add(g);
                }
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Runs {@code action} now, or once generation continues when paused (for /health). */
    boolean whenNotPaused(Runnable action) {
        lock.lock();
        try {
            if (paused) {
                pauseWaiters.add(action);
                return false;
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    void pause(String mode) {
        List<Generation> toAbort = List.of();
        lock.lock();
        try {
            paused = true;
            if (mode.equals("abort")) {
                toAbort = new ArrayList<>(active);
            }
        } finally {
            lock.unlock();
        }
        toAbort.forEach(g -> g.abort("paused with mode=abort"));
    }

    void resume() {
        List<Generation> resumed;
        List<Runnable> waiters;
        lock.lock();
        try {
            paused = false;
            resumed = new ArrayList<>(suspended);
            suspended.clear();
            waiters = new ArrayList<>(pauseWaiters);
            pauseWaiters.clear();
        } finally {
            lock.unlock();
        }
        resumed.forEach(Generation::resume);
        waiters.forEach(Runnable::run);
    }

    /** Aborts running generations whose rid is in {@code rids}, or all of them. */
    int abort(Set<String> rids, boolean all) {
        List<Generation> victims = new ArrayList<>();
        lock.lock();
        try {
            for (Generation g : active) {
                if (all || rids.contains(g.rid())) {
                    victims.add(g);
                }
            }
        } finally {
            lock.unlock();
        }
        victims.forEach(g -> g.abort("aborted by request"));
        return victims.size();
    }

    /** Whether requests are running; a flush must not proceed then. */
    boolean busy() {
        return activeRequests() > 0;
    }

    void markUnhealthy() {
        lock.lock();
        try {
            healthy = false;
        } finally {
            lock.unlock();
        }
    }

    /** Replaces the served weights with a fresh private copy of {@code dir}. */
    void reload(Path dir, String newLabel) throws IOException {
        ReferenceWeights fresh = ReferenceWeights.load(dir);
        ReferenceWeights old;
        lock.lock();
        try {
            old = weights;
            weights = fresh;
            modelPath = dir.toAbsolutePath().toString();
            if (newLabel != null) {
                label = newLabel;
            }
        } finally {
            lock.unlock();
        }
        old.close();
    }

    /** Runs {@code patch} on the live weights under the lock, then rehashes and relabels. */
    void patch(WeightsPatch patch, String newLabel) throws IOException {
        lock.lock();
        try {
            try {
                patch.apply(weights.specs(), weights.tensors());
            } finally {
                weights.rehash();
            }
            if (newLabel != null) {
                label = newLabel;
            }
        } finally {
            lock.unlock();
        }
    }

    /** A change applied to the live weights in place. */
    interface WeightsPatch {
        void apply(Map<String, dev.stitch.tensor.TensorSpec> specs, Map<String, java.lang.foreign.MemorySegment> tensors)
                throws IOException;
    }

    void label(String newLabel) {
        lock.lock();
        try {
            label = newLabel;
        } finally {
            lock.unlock();
        }
    }

    ObjectNode modelInfo() {
        lock.lock();
        try {
            ObjectNode o = NODES.objectNode();
            o.put("model_path", modelPath);
            o.put("tokenizer_path", modelPath);
            o.put("is_generation", true);
            o.put("weight_version", label);
            o.put("model_type", "stitch_reference");
            ArrayNode arch = o.putArray("architectures");
            arch.add("StitchReferenceForCausalLM");
            o.put("weights_digest", weights.digest());
            o.put("num_tensors", weights.specs().size());
            o.put("weights_bytes", weights.totalBytes());
            return o;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public synchronized void close() {
        if (serverChannel != null) {
            serverChannel.close().awaitUninterruptibly();
            serverChannel = null;
        }
        if (group != null) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            group = null;
        }
        if (loader != null) {
            loader.shutdownNow();
            loader = null;
        }
        lock.lock();
        try {
            if (weights != null) {
                weights.close();
                weights = null;
            }
        } finally {
            lock.unlock();
        }
    }

    static UncheckedIOException unchecked(IOException e) {
        return new UncheckedIOException(e);
    }
}
