package dev.stitch.bench.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.bench.remote.LimitedLink;
import dev.stitch.bench.remote.NamespaceLink;
import dev.stitch.bench.remote.RelayLink;
import dev.stitch.bench.remote.S3ProxyServer;
import dev.stitch.board.BoardAddress;
import dev.stitch.fanout.WakeFanOut;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.WeightIdentity;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@code stitch bench fleet} for one cache mode (docs/benchmarks.md): datacenter A holds
 * s3proxy and the trainer (a child process, inside the namespace when there is one), datacenter B
 * the optional nginx cache and the hosts; the link between them is limited and counted. The trainer
 * publishes K versions one at a time; then late joiners start from nothing.
 */
final class FleetRun {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String BUCKET = "fleet";
    private static final String BOARD_PATH = "/" + BUCKET + "/board";

    record Options(int hosts, int versions, double linkMbps, int lateJoiners, long modelBytes, double density,
                   int anchorInterval, double pollIntervalS, Path s3proxyJar, String linkKind, boolean engineMode,
                   boolean wake) {
    }

    private final String cacheMode;
    private final Options o;
    private final Path work;
    private final PrintStream log;
    private final List<AutoCloseable> open = new ArrayList<>();

    FleetRun(String cacheMode, Options options, Path work, PrintStream log) {
        this.cacheMode = cacheMode;
        this.o = options;
        this.work = work;
        this.log = log;
    }

    /** Runs and returns the summary row; the per-version rows go to {@code versionRows}. */
    Map<String, Object> run(List<Map<String, Object>> versionRows) throws Exception {
        try {
            return measure(versionRows);
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    log.println("closing: " + e.getMessage());
                }
            }
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    private Map<String, Object> measure(List<Map<String, Object>> versionRows) throws Exception {
        LimitedLink link = keep(openLink());
        log.println("[" + cacheMode + "] link: " + link.describe());
        S3ProxyServer s3 = keep(S3ProxyServer.start(S3ProxyServer.locateJar(o.s3proxyJar()),
                Files.createDirectories(work.resolve("s3-data")), link.storeHost(), link.storeCommandPrefix(),
                work.resolve("s3proxy.log"), true));
        URI origin = URI.create("http://" + link.clientAuthority(s3.port()));
        S3ProxyServer.createBucket(origin, BUCKET);
        Path base = work.resolve("base");
        Trainer trainer = keep(new Trainer(link, "http://" + link.storeHost() + ":" + s3.port(), base));

        BoardAddress board;
        URI cacheBoardUri = null;
        if (cacheMode.equals("nginx")) {
            NginxCache cache = keep(NginxCache.start(origin, BOARD_PATH, "127.0.0.1", freePort(), work.resolve("nginx"), "16m",
                    List.of()));
            cacheBoardUri = cache.boardUri(BOARD_PATH);
            board = BoardAddress.parse(cacheBoardUri.toString());
        } else {
            board = BoardAddress.parse(origin + BOARD_PATH);
        }
        log.printf("[%s] %d hosts follow %s%n", cacheMode, o.hosts(), board);
        List<FleetHost> hosts = new ArrayList<>();
        for (int h = 0; h < o.hosts(); h++) {
            hosts.add(keep(new FleetHost("host-" + h, board, base, work.resolve("host-" + h), o.pollIntervalS(), 16 << 20, o.engineMode(), listenHost(link))));
        }
        List<URI> sidecarUrls = new ArrayList<>();
        for (FleetHost host : hosts) {
            sidecarUrls.add(URI.create("http://127.0.0.1:" + host.port()));
        }
        String wake = "-";
        if (o.wake() && cacheMode.equals("nginx")) {
            // one notification crosses the link; the fan-out warms the cache, then wakes the hosts (board.md §7.8)
            WakeFanOut fanOut = keep(new WakeFanOut(new java.net.InetSocketAddress(listenHost(link), 0),
                    cacheBoardUri, sidecarUrls, null, null, dev.stitch.board.store.StoreOptions.defaults().withPartBytes(16 << 20)));
            wake = "http://" + hostB(link) + ":" + fanOut.port();
        } else if (o.wake()) {
            List<String> direct = new ArrayList<>();
            for (FleetHost host : hosts) {
                direct.add("http://" + hostB(link) + ":" + host.port());
            }
            wake = String.join(",", direct);
        }
        trainer.notifyOnPublish(wake);
        Map<Long, String> digests = new ConcurrentHashMap<>();
        digests.put(0L, engineDigest(hosts.get(0).engineUrl()));
        PinnedLoad load = keep(new PinnedLoad(digests));
        for (FleetHost host : hosts) {
            load.add(host::port, host::servedVersion, 100);
        }

        double linkRatioSum = 0;
        double firstSum = 0;
        double lastSum = 0;
        long linkTotal = 0;
        long copyTotal = 0;
        for (int v = 1; v <= o.versions(); v++) {
            long rx0 = link.bytesToB();
            long publishedMicros = trainer.publish(v);
            long[] servedMicros = waitUntilServed(hosts, v);
            long linkBytes = link.bytesToB() - rx0;
            Manifest m = manifest(hosts.get(0), v);
            digests.put((long) v, m.metadata().path("weights_digest").asText());
            long copy = transitionBytes(m);
            double first = (min(servedMicros) - publishedMicros) / 1e6;
            double last = (max(servedMicros) - publishedMicros) / 1e6;
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("cache", cacheMode);
            row.put("version", v);
            row.put("version_bytes", copy);
            row.put("link_bytes", linkBytes);
            row.put("link_bytes_ratio", round(linkBytes / (double) copy));
            row.put("first_host_s", round(first));
            row.put("last_host_s", round(last));
            versionRows.add(row);
            log.printf("[%s] v%d: %d bytes per copy, %d over the link (%.3fx), first host %.2f s, last %.2f s%n", cacheMode, v, copy,
                    linkBytes, linkBytes / (double) copy, first, last);
            linkRatioSum += linkBytes / (double) copy;
            firstSum += first;
            lastSum += last;
            linkTotal += linkBytes;
            copyTotal += copy;
        }

        double joinerSeconds = Double.NaN;
        double joinerRatio = Double.NaN;
        if (o.lateJoiners() > 0) {
            long rx0 = link.bytesToB();
            long t0 = System.nanoTime();
            List<FleetHost> joiners = new ArrayList<>();
            for (int j = 0; j < o.lateJoiners(); j++) {
                joiners.add(keep(new FleetHost("joiner-" + j, board, base, work.resolve("joiner-" + j), o.pollIntervalS(), 16 << 20, o.engineMode(), listenHost(link))));
            }
            waitUntilServed(joiners, o.versions());
            joinerSeconds = (System.nanoTime() - t0) / 1e9;
            long linkBytes = link.bytesToB() - rx0;
            long fetched = joiners.get(0).bytesFetched();
            joinerRatio = linkBytes / (double) fetched;
            log.printf("[%s] %d late joiner(s) served v%d after %.2f s; one fetched %d bytes, the link carried %d (%.3fx)%n",
                    cacheMode, o.lateJoiners(), o.versions(), joinerSeconds, fetched, linkBytes, joinerRatio);
            for (FleetHost j : joiners) {
                load.add(j::port, j::servedVersion, 100);
            }
        }
        Thread.sleep(500);
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("cache", cacheMode);
        summary.put("version", "all");
        summary.put("hosts", o.hosts());
        summary.put("link", link.describe());
        summary.put("link_mbps", o.linkMbps());
        summary.put("link_bytes_ratio", round(linkTotal / (double) copyTotal));
        summary.put("link_bytes_ratio_mean", round(linkRatioSum / o.versions()));
        summary.put("first_host_s", round(firstSum / o.versions()));
        summary.put("last_host_s", round(lastSum / o.versions()));
        summary.put("last_over_first", round(lastSum / firstSum));
        summary.put("late_joiner_s", round(joinerSeconds));
        summary.put("late_joiner_link_ratio", round(joinerRatio));
        summary.put("pinned_requests", load.ok() + load.conflicts());
        summary.put("pinned_p50_ms", round(load.percentileMillis(0.5)));
        summary.put("pinned_p99_ms", round(load.percentileMillis(0.99)));
        summary.put("conflicts_409", load.conflicts());
        summary.put("request_errors", load.errors());
        summary.put("mislabeled", load.mislabeled());
        return summary;
    }

    /** Sidecars listen where both this process and datacenter A (the trainer's wake) reach them. */
    private static String listenHost(LimitedLink link) {
        return link instanceof NamespaceLink ? "0.0.0.0" : "127.0.0.1";
    }

    /** Where datacenter A reaches services of datacenter B (this process). */
    private static String hostB(LimitedLink link) {
        return link instanceof NamespaceLink ns ? ns.hostB() : "127.0.0.1";
    }

    private LimitedLink openLink() throws IOException {
        String why = NamespaceLink.unavailableReason();
        if (!o.linkKind().equals("relay") && why == null) {
            return NamespaceLink.create(o.linkMbps());
        }
        if (o.linkKind().equals("netns")) {
            throw new IOException("--link netns needs root with iproute2: " + why);
        }
        log.println("[" + cacheMode + "] network namespace unavailable (" + (why == null ? "--link relay" : why)
                + "); using the throttled relay");
        return new RelayLink(o.linkMbps());
    }

    /** Waits until every host serves {@code v}; returns when each was first seen serving it (epoch micros). */
    private long[] waitUntilServed(List<FleetHost> hosts, long v) throws InterruptedException, IOException {
        long[] at = new long[hosts.size()];
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
        int left = hosts.size();
        while (left > 0) {
            if (System.nanoTime() > deadline) {
                List<String> states = new ArrayList<>();
                for (FleetHost h : hosts) {
                    states.add(h.servedVersion() + (h.lastError() == null ? "" : " (" + h.lastError() + ")"));
                }
                throw new IOException("hosts did not reach version " + v + " within 10 minutes: " + states);
            }
            for (int i = 0; i < hosts.size(); i++) {
                if (at[i] == 0 && hosts.get(i).servedVersion() >= v) {
                    at[i] = nowMicros();
                    left--;
                }
            }
            Thread.sleep(5);
        }
        return at;
    }

    private static Manifest manifest(FleetHost host, long v) throws IOException {
        Path file = host.cacheDir().resolve("versions").resolve(WeightIdentity.format(v)).resolve(Manifest.FILE_NAME);
        return Manifest.parse(Files.readAllBytes(file), file.toString());
    }

    /** The bytes a host that replays the version fetches: its transition artifacts (not the anchor). */
    private static long transitionBytes(Manifest m) {
        long n = 0;
        for (Artifact a : m.artifacts()) {
            if (!a.is(ArtifactKind.FULL) && a.sizeBytes() != null) {
                n += a.sizeBytes();
            }
        }
        return Math.max(1, n);
    }

    private static String engineDigest(String engineUrl) throws IOException, InterruptedException {
        try (HttpClient c = HttpClient.newHttpClient()) {
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(engineUrl + "/generate"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": 1}}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            JsonNode meta = JSON.readTree(r.body()).path("meta_info");
            return meta.path("weights_digest").asText();
        }
    }

    private static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }

    private static long min(long[] a) {
        long m = Long.MAX_VALUE;
        for (long x : a) {
            m = Math.min(m, x);
        }
        return m;
    }

    private static long max(long[] a) {
        long m = Long.MIN_VALUE;
        for (long x : a) {
            m = Math.max(m, x);
        }
        return m;
    }

    private static double round(double v) {
        return Double.isNaN(v) ? v : Math.round(v * 1000) / 1000.0;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The trainer child process in datacenter A. */
    private final class Trainer implements AutoCloseable {
        private final Process process;
        private final BufferedReader out;
        private final PrintStream in;

        Trainer(LimitedLink link, String endpoint, Path base) throws IOException {
            List<String> cmd = new ArrayList<>(link.storeCommandPrefix());
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.addAll(List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx2g",
                    "-cp", System.getProperty("java.class.path"), FleetTrainer.class.getName(), endpoint, "s3://" + BUCKET + "/board",
                    Long.toString(o.modelBytes()), Double.toString(o.density()), Integer.toString(o.anchorInterval()), base.toString(),
                    o.engineMode() ? "sparse_delta" : "stitch_delta"));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(work.resolve("trainer.err").toFile());
            pb.environment().put("AWS_ACCESS_KEY_ID", S3ProxyServer.IDENTITY);
            pb.environment().put("AWS_SECRET_ACCESS_KEY", S3ProxyServer.CREDENTIAL);
            pb.environment().put("AWS_REGION", "us-east-1");
            pb.environment().put("AWS_EC2_METADATA_DISABLED", "true");
            process = pb.start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            expect("ready");
        }

        /** Tells the trainer which sidecars to wake after each publish ({@code -}: none). */
        void notifyOnPublish(String urls) {
            in.println("notify " + urls);
        }

        /** Publishes version {@code v}; returns when its pointer moved (epoch micros). */
        long publish(long v) throws IOException {
            in.println("publish");
            String line = expect("published " + v + " ");
            return Long.parseLong(line.split(" ")[2]);
        }

        private String expect(String prefix) throws IOException {
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            String err = Files.exists(work.resolve("trainer.err")) ? Files.readString(work.resolve("trainer.err")) : "";
            throw new IOException("the trainer exited before '" + prefix.trim() + "': "
                    + (err.length() > 2000 ? err.substring(err.length() - 2000) : err));
        }

        @Override
        public void close() {
            in.close();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
