package dev.stitch.bench.proxy;

import dev.stitch.bench.ScratchDirectories;
import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.cli.CliFailure;
import dev.stitch.refengine.ReferenceEngine;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench proxy}: what the sidecar adds to a request. The reference engine (no token
 * latency, a tiny model) runs in this process; a real {@code stitch sidecar} runs as a child JVM in
 * front of it over an empty board (version 0). The same load then goes direct and through the
 * sidecar: open-loop runs at each offered rate plus one closed-loop saturation run per path. The
 * sidecar's CPU time comes from {@code /proc/<pid>/stat}, so the per-request figure holds even when
 * generator, engine and sidecar share cores.
 */
@Command(name = "proxy",
        mixinStandardHelpOptions = true,
        description = {
            "Proxy overhead: p50/p99 latency and throughput direct to the reference engine vs through",
            "a sidecar child process, open-loop at each --rps plus a closed-loop saturation run",
            "(rps_offered 0). Sidecar rows carry proxy_cpu_ms_per_req (sidecar CPU / requests).",
            "Targets: added p99 at 1000 req/s <= 1 ms; proxy_cpu_ms_per_req at saturation <= 0.03.",
            "With --idle-connections N it instead holds N idle connections to the sidecar (from child",
            "processes of at most 9000 each) and times /health and a pinned /generate on new connections;",
            "target: both under 1 s with 20000 idle connections. The sidecar child needs a file-descriptor",
            "limit above its --max-connections (8192 by default); raise it first, e.g.",
            "  ulimit -n 65536; ./stitch bench proxy --idle-connections 20000"
        })
public final class ProxyBenchCommand implements BenchSubcommand, Runnable {
    private static final String BODY = "{\"text\":\"stitch proxy benchmark\",\"sampling_params\":{\"max_new_tokens\":1}}";

    @Option(names = "--rps", split = ",", defaultValue = "200,1000", paramLabel = "R",
            description = "Offered request rates for the open-loop runs, comma-separated (default: ${DEFAULT-VALUE}).")
    List<Double> rps;

    @Option(names = "--duration-s", defaultValue = "10", paramLabel = "D",
            description = "Measured seconds per run (default: ${DEFAULT-VALUE}).")
    double durationS;

    @Option(names = "--warmup-s", defaultValue = "5", paramLabel = "W",
            description = "Unmeasured closed-loop seconds per path before measuring, to warm the JIT (default: ${DEFAULT-VALUE}).")
    double warmupS;

    @Option(names = "--connections", defaultValue = "64", paramLabel = "N",
            description = "Keep-alive connections of the open-loop generator (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--concurrency", defaultValue = "16", paramLabel = "C",
            description = "Connections kept busy in the closed-loop saturation run (default: ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--sidecar-heap", defaultValue = "512m", paramLabel = "SIZE",
            description = "Maximum heap of the sidecar child JVM (default: ${DEFAULT-VALUE}).")
    String sidecarHeap;

    @Option(names = "--idle-connections", defaultValue = "0", paramLabel = "N",
            description = "Run the idle-connection check with N idle connections instead of the latency runs "
                    + "(default: ${DEFAULT-VALUE}, off).")
    int idleConnections;

    @Option(names = "--idle-samples", defaultValue = "50", paramLabel = "S",
            description = "Timed /health and pinned /generate requests of the idle-connection check "
                    + "(default: ${DEFAULT-VALUE}).")
    int idleSamples;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"proxy\", \"results\": [...]} to FILE.")
    Path json;

    public ProxyBenchCommand() {
    }

    @Override
    public void run() {
        validate();
        Path work;
        try {
            work = Files.createTempDirectory("stitch-bench-proxy");
        } catch (IOException e) {
            throw new CliFailure("cannot create a work directory: " + e.getMessage());
        }
        BenchResults results = new BenchResults("proxy");
        try (ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(tinyModel(work))).start();
             SidecarProcess sidecar = SidecarProcess.start(work, engine.url(), sidecarHeap)) {
            progress(String.format(Locale.ROOT, "engine %s, sidecar pid %d on port %d; about %.0f s to go",
                    engine.url(), sidecar.pid(), sidecar.port(), 2 * warmupS + (2 * rps.size() + 2) * durationS));
            sidecar.awaitReady(Duration.ofSeconds(60));
            if (idleConnections > 0) {
                new IdleConnectionCheck(sidecar.port(), idleConnections, idleSamples).run(results);
                results.printTable(System.out, "path", "idle_connections", "idle_connect_failures", "requests",
                        "errors", "p50_ms", "p99_ms", "max_ms", "open_connections", "evicted");
                if (json != null) {
                    results.writeJson(json);
                }
                return;
            }
            measure(results, engine.port(), sidecar);
        } catch (IOException e) {
            throw new CliFailure("proxy benchmark failed: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliFailure("interrupted");
        } finally {
            ScratchDirectories.deleteQuietly(work, "bench proxy");
        }
        results.printTable(System.out, "path", "rps_offered", "rps_achieved", "p50_ms", "p99_ms", "errors",
                "requests", "added_p99_ms", "proxy_cpu_ms_per_req", "proxy_cpu_ms_per_req_excl_jit");
        if (json != null) {
            results.writeJson(json);
        }
    }

    private void validate() {
        if (durationS <= 0 || warmupS < 0) {
            throw new CliFailure("--duration-s must be > 0 and --warmup-s >= 0");
        }
        if (idleConnections < 0 || idleSamples < 1) {
            throw new CliFailure("--idle-connections must be >= 0 and --idle-samples >= 1");
        }
        if (connections < 1 || concurrency < 1) {
            throw new CliFailure("--connections and --concurrency must be >= 1");
        }
        for (Double r : rps) {
            if (r == null || !(r > 0)) {
                throw new CliFailure("--rps values must be > 0, got " + r);
            }
        }
    }

    private void measure(BenchResults results, int enginePort, SidecarProcess sidecar) throws InterruptedException, IOException {
        byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
        int conns = Math.max(connections, concurrency);
        try (LoadGenerator direct = new LoadGenerator("127.0.0.1", enginePort, "/generate", body, conns);
             LoadGenerator viaSidecar = new LoadGenerator("127.0.0.1", sidecar.port(), "/generate", body, conns)) {
            if (warmupS > 0) {
                // Both load shapes run once unmeasured, so the sidecar's JIT has compiled the paths each uses.
                double top = rps.stream().mapToDouble(Double::doubleValue).max().orElse(1000);
                progress("warming up " + warmupS + " s per path");
                direct.closedLoop(warmupS / 2);
                viaSidecar.closedLoop(warmupS / 2);
                direct.openLoop(top, warmupS / 2);
                viaSidecar.openLoop(top, warmupS / 2);
            }
            for (double r : rps) {
                progress(String.format(Locale.ROOT, "open loop at %.0f req/s, %.1f s per path", r, durationS));
                LoadGenerator.Result d = direct.openLoop(r, durationS);
                long[] cpu0 = sidecar.cpuNanos();
                LoadGenerator.Result s = viaSidecar.openLoop(r, durationS);
                long[] cpu1 = sidecar.cpuNanos();
                row(results, "direct", r, d, null, null, null);
                row(results, "sidecar", r, s, d, cpu0, cpu1);
            }
            progress(String.format(Locale.ROOT, "closed loop, %d connections, %.1f s per path", concurrency, durationS));
            try (LoadGenerator directSat = new LoadGenerator("127.0.0.1", enginePort, "/generate", body, concurrency);
                 LoadGenerator sidecarSat = new LoadGenerator("127.0.0.1", sidecar.port(), "/generate", body, concurrency)) {
                LoadGenerator.Result d = directSat.closedLoop(durationS);
                long[] cpu0 = sidecar.cpuNanos();
                LoadGenerator.Result s = sidecarSat.closedLoop(durationS);
                long[] cpu1 = sidecar.cpuNanos();
                row(results, "direct", 0, d, null, null, null);
                row(results, "sidecar", 0, s, d, cpu0, cpu1);
            }
        }
    }

    private static void row(BenchResults results, String path, double offered, LoadGenerator.Result r,
                            LoadGenerator.Result direct, long[] cpuBefore, long[] cpuAfter) {
        Map<String, Object> row = results.row();
        row.put("path", path);
        row.put("rps_offered", offered);
        row.put("rps_achieved", round(r.achievedRps(), 1));
        row.put("p50_ms", round(r.percentileMillis(0.50), 3));
        row.put("p99_ms", round(r.percentileMillis(0.99), 3));
        row.put("errors", r.errors());
        row.put("requests", r.completed());
        if (direct != null) {
            row.put("added_p99_ms", round(r.percentileMillis(0.99) - direct.percentileMillis(0.99), 3));
            long proxied = Math.max(1, r.completed() + r.errors());
            row.put("proxy_cpu_ms_per_req", round((cpuAfter[0] - cpuBefore[0]) / 1e6 / proxied, 4));
            // The same figure without the JIT compiler threads, which keep compiling on a busy machine.
            row.put("proxy_cpu_ms_per_req_excl_jit", round((cpuAfter[1] - cpuBefore[1]) / 1e6 / proxied, 4));
        }
    }

    private static double round(double v, int digits) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return 0.0;
        }
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }

    /** A one-tensor F32 checkpoint: enough for the engine to hash and serve. */
    public static Path tinyModel(Path work) throws IOException {
        Path dir = Files.createDirectories(work.resolve("model"));
        String header = "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]}}";
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        int padded = (h.length + 7) & ~7;
        ByteBuffer buf = ByteBuffer.allocate(8 + padded + 64).order(ByteOrder.LITTLE_ENDIAN);
        buf.putLong(padded);
        buf.put(h);
        for (int i = h.length; i < padded; i++) {
            buf.put((byte) ' ');
        }
        for (int i = 0; i < 16; i++) {
            buf.putFloat(i * 0.25f);
        }
        Files.write(dir.resolve("model.safetensors"), buf.array());
        return dir;
    }

    static void progress(String line) {
        if (System.console() != null) {
            System.err.println("bench proxy: " + line);
        }
    }
}
