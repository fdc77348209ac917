package dev.stitch.sidecar;

import static org.junit.jupiter.api.Assertions.fail;

import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.router.CommitLimit;
import dev.stitch.router.ReplicaView;
import dev.stitch.router.RollingUpdatePolicy;
import dev.stitch.router.RouterServer;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.router.RouterLink;
import dev.stitch.sync.SyncConfig;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Real replicas for router end-to-end tests, as {@link RouterFleetTest} builds them: a board with a publisher, and
 * per replica a reference engine with a sidecar in host mode that asks a router before committing. Each sidecar
 * listens on a port chosen once, so a replica that is killed comes back as the same router member. Closing the
 * fixture closes everything still running.
 */
final class RouterReplicas implements AutoCloseable {

    private final Path tmp;
    private final Path base;
    private final Path boardRoot;
    private final WeightPublisher publisher;
    private final Duration tokenLatency;
    private final List<Replica> replicas = new ArrayList<>();

    /** One replica: its sidecar's fixed port and local checkpoint folder, and the engine and sidecar while up. */
    final class Replica {
        final int index;
        final int port;
        final String url;
        private final Path local;
        private ReferenceEngine engine;
        private Sidecar sidecar;
        private Process process;
        private Path processLog;

        private Replica(int index, int port) {
            this.index = index;
            this.port = port;
            this.url = "http://127.0.0.1:" + port;
            this.local = tmp.resolve("local-" + index);
        }

        /**
         * Starts an engine booted from the base checkpoint and a sidecar on this replica's port asking
         * {@code router} before each commit; after a kill the sidecar finds its local checkpoint and state folder
         * as the killed one left them, as a restarted host would.
         */
        void start(URI router) throws IOException {
            if (running()) {
                throw new IllegalStateException("replica " + index + " is running");
            }
            engine = new ReferenceEngine(ReferenceEngine.Config.local(base).withTokenLatency(tokenLatency)).start();
            URI upstream = URI.create(engine.url());
            SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", port),
                    SyncConfig.defaults().withPolling(0.2, 0).withBackoff(0.1, 0.3)
                            .withBoot(null, 0, local.resolve(".stitch")),
                    boardRoot, BoardLayout.STITCH, "host",
                    SglangSettings.of(upstream, boardRoot).withHostCheckpoints(local, base).withOptions(3, false, true),
                    "replica-" + index).withRouter(new RouterLink(router, null, url, RouterLink.DEFAULT_TIMEOUT));
            sidecar = Sidecar.start(config, "test");
        }

        /**
         * The same replica with its sidecar as {@code stitch sidecar} in a child JVM (the engine stays in this one),
         * so that {@link #kill} can end it as a crash would: SIGKILL, and the kernel closes every socket it had.
         */
        void startProcess(URI router) throws IOException {
            if (running()) {
                throw new IllegalStateException("replica " + index + " is running");
            }
            engine = new ReferenceEngine(ReferenceEngine.Config.local(base).withTokenLatency(tokenLatency)).start();
            processLog = tmp.resolve("sidecar-" + index + "-" + System.nanoTime() + ".log");
            List<String> cmd = List.of(ProcessHandle.current().info().command().orElse("java"),
                    "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx256m",
                    "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), "dev.stitch.cli.StitchCli",
                    "sidecar", "--board", boardRoot.toString(), "--upstream", engine.url(), "--mode", "host",
                    "--local-checkpoint", local.toString(), "--base-checkpoint", base.toString(),
                    "--state-dir", local.resolve(".stitch").toString(), "--host", "127.0.0.1", "--port", Integer.toString(port),
                    "--poll-interval-s", "0.2", "--backoff-initial-s", "0.1", "--backoff-max-s", "0.3",
                    "--flush-retries", "3", "--probe-delta-receiver", "true",
                    "--router", router.toString(), "--replica-id", url);
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(processLog.toFile()).start();
            // should this JVM end before the test closes the fixture, the child does not outlive it
            Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
            process = p;
        }

        /** The child sidecar's output so far, for failure messages. */
        String processLog() {
            try {
                return processLog == null ? "" : Files.readString(processLog);
            } catch (IOException e) {
                return e.toString();
            }
        }

        /**
         * The replica dies: a child sidecar is killed with SIGKILL (no shutdown hook runs; the kernel closes its
         * sockets), one in this JVM is closed; then the engine goes.
         */
        void kill() throws InterruptedException {
            Sidecar s = sidecar;
            Process p = process;
            ReferenceEngine e = engine;
            sidecar = null;
            process = null;
            engine = null;
            if (p != null) {
                p.destroyForcibly();
                if (!p.waitFor(10, TimeUnit.SECONDS)) {
                    throw new AssertionError("the sidecar process of replica " + index + " outlived SIGKILL");
                }
            }
            if (s != null) {
                s.close();
            }
            if (e != null) {
                e.close();
            }
        }

        boolean running() {
            return sidecar != null || process != null;
        }

        /** The version the sidecar serves, or -1 while the replica is down (or its process does not answer yet). */
        long served() {
            Sidecar s = sidecar;
            if (s != null) {
                return s.worker().status().currentVersion();
            }
            if (process == null) {
                return -1;
            }
            try {
                Http.Reply r = Http.get(port, "/stitch/state");
                return r.status() == 200 ? r.json().path("served_version").asLong(-1) : -1;
            } catch (IOException e) {
                return -1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }

        /** A counter from the sidecar's {@code /metrics}. */
        long counter(String name) throws IOException, InterruptedException {
            for (String line : Http.get(port, "/metrics").body().split("\n")) {
                if (line.startsWith(name + " ")) {
                    return (long) Double.parseDouble(line.substring(name.length() + 1).strip());
                }
            }
            throw new AssertionError(name + " not in the /metrics of replica " + index);
        }

        @Override
        public String toString() {
            Sidecar s = sidecar;
            if (process != null) {
                return url + " (process) v" + served();
            }
            return url + (s == null ? " down" : " v" + s.worker().status().currentVersion() + "/" + s.worker().status().state());
        }
    }

    /**
     * A board seeded with the base weights, and {@code count} replicas (not started) on free ports.
     *
     * @param tokenLatency the engines' time per generated token
     */
    RouterReplicas(Path tmp, int count, Duration tokenLatency) throws IOException {
        this.tmp = tmp;
        this.tokenLatency = tokenLatency;
        this.base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        this.boardRoot = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardRoot, "run-r", BoardOptions.defaults());
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-r").backends(DeltaFormat.STITCH_DELTA)
                    .anchorInterval(0).threads(1).seed(seed).build();
        }
        for (int i = 0; i < count; i++) {
            replicas.add(new Replica(i, freePort()));
        }
    }

    List<Replica> replicas() {
        return replicas;
    }

    List<String> urls() {
        return replicas.stream().map(r -> r.url).toList();
    }

    void startAll(URI router) throws IOException {
        for (Replica r : replicas) {
            r.start(router);
        }
    }

    /** Publishes {@code version} (TinyModel's weights of that step). */
    void publish(int version) throws Exception {
        try (Weights w = TinyModel.weights(version)) {
            publisher.publish(version, w);
        }
    }

    @Override
    public String toString() {
        return replicas.toString();
    }

    @Override
    public void close() throws InterruptedException {
        for (int i = replicas.size() - 1; i >= 0; i--) {
            replicas.get(i).kill();
        }
        publisher.close();
    }

    /**
     * A port free now, below Linux's ephemeral range (32768 and up): a replica keeps its port across restarts, and
     * a port the kernel may hand to any later bind(0) (an engine, the router) could be taken while it is down.
     */
    static int freePort() throws IOException {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int tries = 0; tries < 200; tries++) {
            int candidate = random.nextInt(20_000, 32_000);
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new java.net.InetSocketAddress("127.0.0.1", candidate));
                return candidate;
            } catch (IOException taken) {
                // in use: try another
            }
        }
        throw new IOException("no free port found below the ephemeral range");
    }

    /**
     * A router as RouterFleetTest configures it (one commit at a time), on {@code port} (0: any) with
     * {@code members}: long polls of 2 s, a failed state poll retried after 100 ms, denials retried after 100 ms.
     */
    static RouterServer router(int port, List<String> members, int holdPrevious) throws IOException, InterruptedException {
        return new RouterServer(new RouterServer.Config("127.0.0.1", port, members, null,
                ProxyServer.DEFAULT_VERSIONED_ROUTES, 64 << 20, Duration.ofSeconds(60), 2_000, 100, 1_000,
                new RollingUpdatePolicy(CommitLimit.parse("1"), holdPrevious, 100, 120_000)));
    }

    /**
     * {@link RouterServer#awaitFleet} with a deadline: fails, showing the router's {@code /fleet} and
     * {@code context}, when the router's view does not satisfy {@code condition} within {@code millis}.
     */
    static void awaitFleet(RouterServer router, long millis, Predicate<List<ReplicaView>> condition,
                           Supplier<String> context) throws InterruptedException {
        Thread waiter = Thread.ofVirtual().name("await-fleet").start(() -> {
            try {
                router.awaitFleet(condition);
            } catch (InterruptedException e) {
                // the deadline passed
            }
        });
        if (!waiter.join(Duration.ofMillis(millis))) {
            waiter.interrupt();
            waiter.join();
        }
        if (!condition.test(router.fleet().snapshot())) {
            fail("the router's view did not get there within " + millis + " ms: /fleet "
                    + fleetBody(router.address().getPort()) + "; " + context.get());
        }
    }

    static String fleetBody(int routerPort) {
        try {
            return Http.get(routerPort, "/fleet").body();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** A {@code /generate} body of {@code tokens} new tokens pinned to exactly {@code version}. */
    static String pinned(long version, int tokens) {
        return "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": " + tokens
                + "}, \"weight_version\": {\"exact_version\": " + version + "}}";
    }

    /**
     * One HTTP/1.1 exchange on a raw socket, so the test sees exactly how a streamed response ends: the chunked
     * body's last chunk (a clean end) or the connection closing before it (a cut). Reads wait at most
     * {@code readTimeout} each.
     */
    static final class RawExchange implements AutoCloseable {
        /** How the body ended. */
        enum End { CLEAN, CUT, STALLED }

        private final Socket socket;
        private final InputStream in;
        final int status;
        final Map<String, String> headers = new LinkedHashMap<>();
        private final StringBuilder pending = new StringBuilder();
        private final StringBuilder body = new StringBuilder();
        private End end;
        private String endDetail;

        RawExchange(int port, String method, String path, String requestBody, Duration readTimeout) throws IOException {
            socket = new Socket("127.0.0.1", port);
            socket.setSoTimeout((int) readTimeout.toMillis());
            byte[] b = requestBody.getBytes(StandardCharsets.UTF_8);
            OutputStream out = socket.getOutputStream();
            out.write((method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(b);
            out.flush();
            in = new BufferedInputStream(socket.getInputStream());
            String statusLine = line();
            status = Integer.parseInt(statusLine.split(" ")[1]);
            for (String h = line(); !h.isEmpty(); h = line()) {
                int colon = h.indexOf(':');
                headers.put(h.substring(0, colon).strip().toLowerCase(Locale.ROOT), h.substring(colon + 1).strip());
            }
            if (!"chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
                throw new IOException("expected a chunked body, got headers " + headers);
            }
        }

        String header(String name) {
            return headers.get(name);
        }

        /** The next server-sent event's text (without the blank line), or null once the body ended. */
        String nextEvent() {
            while (true) {
                int blank = pending.indexOf("\n\n");
                if (blank >= 0) {
                    String event = pending.substring(0, blank);
                    pending.delete(0, blank + 2);
                    return event;
                }
                if (end != null || !readChunk()) {
                    return null;
                }
            }
        }

        /** Reads the rest of the body, however it ends. */
        End finish() {
            while (end == null) {
                readChunk();
            }
            return end;
        }

        End end() {
            return end;
        }

        String endDetail() {
            return endDetail;
        }

        /** Everything received of the body. */
        String body() {
            return body.toString();
        }

        /** Reads one chunk into {@code pending}; false once the body ended (see {@link #end}). */
        private boolean readChunk() {
            try {
                String sizeLine = line();
                int semi = sizeLine.indexOf(';');
                int size = Integer.parseInt((semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip(), 16);
                if (size == 0) {
                    for (String t = line(); !t.isEmpty(); t = line()) {
                        // trailers
                    }
                    end = End.CLEAN;
                    endDetail = "last chunk";
                    return false;
                }
                byte[] data = in.readNBytes(size);
                if (data.length < size) {
                    throw new EOFException("connection closed inside a chunk");
                }
                String text = new String(data, StandardCharsets.UTF_8);
                pending.append(text);
                body.append(text);
                if (!line().isEmpty()) {
                    throw new IOException("chunk not followed by CRLF");
                }
                return true;
            } catch (SocketTimeoutException e) {
                end = End.STALLED;
                endDetail = e.toString();
            } catch (IOException | RuntimeException e) {
                end = End.CUT;
                endDetail = e.toString();
            }
            return false;
        }

        private String line() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != '\n') {
                if (c < 0) {
                    throw new EOFException("connection closed");
                }
                b.write(c);
            }
            String s = b.toString(StandardCharsets.ISO_8859_1);
            return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
