package dev.stitch.bench.router;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.bench.ScratchDirectories;
import dev.stitch.bench.proxy.LoadGenerator;
import dev.stitch.bench.proxy.ProxyBenchCommand;
import dev.stitch.bench.proxy.SidecarProcess;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.cli.ByteSize;
import dev.stitch.cli.CliFailure;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench router} (docs/protocol/router.md §6): real replicas (reference engine + sidecar) behind
 * {@code stitch router}, run as its own process so its CPU can be measured. Phase one rolls {@code --versions}
 * updates across the fleet under pinned "trajectories" sent both through the router and straight to the
 * replicas in turn, and counts 409s among requests pinned to a version some replica served when they were
 * sent. Phase two measures the router's added latency and CPU per request at {@code --rps}.
 */
@Command(name = "router", mixinStandardHelpOptions = true,
        description = {"Version-aware router: 409 rate of satisfiable pinned requests during rolling updates, through the "
                + "router vs spread directly over the replicas, mislabeled answers (must be 0), requests served on the "
                + "held previous version, the router's added p50/p99 at --rps, and its CPU per request at saturation.",
            "Replicas are reference engines with sidecars in host mode (this process); the router is a child process "
                + "(stitch router --max-committing 1 --hold-previous 1).",
            "Baseline of the CPU and latency targets, in the same run: a router child in front of one sidecar child "
                + "(as bench proxy runs it), both measured on the same requests (chain_* keys, router_cpu_vs_sidecar). "
                + "Targets, as the sidecar's: added p99 <= 1 ms at 1000 req/s, CPU <= 0.03 ms per request at saturation."})
public final class RouterBenchCommand implements BenchSubcommand, Runnable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final double WARMUP_S = 3;
    /** Keep-alive connections of each open-loop load generator: enough that paced requests never queue. */
    private static final int CONNECTIONS = 16;
    /** Connections kept busy at saturation, as in {@code bench proxy}. */
    private static final int CONCURRENCY = 16;
    private static final String UNPINNED = "{\"text\": \"bench\", \"sampling_params\": {\"max_new_tokens\": 1}}";

    @Option(names = "--replicas", defaultValue = "4", paramLabel = "N", description = "Replicas (default ${DEFAULT-VALUE}).")
    int replicas;

    @Option(names = "--versions", defaultValue = "3", paramLabel = "K", description = "Rolling updates (default ${DEFAULT-VALUE}).")
    int versions;

    @Option(names = "--clients", defaultValue = "4", paramLabel = "C",
            description = "Pinned clients per path during the updates (default ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--trajectory-s", defaultValue = "1", paramLabel = "S",
            description = "How long a client keeps pinning the version it started on (default ${DEFAULT-VALUE}).")
    double trajectoryS;

    @Option(names = "--rps", defaultValue = "1000", paramLabel = "R", description = "Rate of the overhead phase (default ${DEFAULT-VALUE}).")
    int rps;

    @Option(names = "--duration-s", defaultValue = "8", paramLabel = "S", description = "Overhead phase length per path (default ${DEFAULT-VALUE}).")
    double durationS;

    @Option(names = "--model-size", defaultValue = "8m", paramLabel = "SIZE", converter = ByteSize.class,
            description = "Synthetic model size (default ${DEFAULT-VALUE}).")
    long modelSize;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"router\", \"results\": [...]} to FILE.")
    Path json;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    @Override
    public void run() {
        if (replicas < 2 || versions < 1 || clients < 1 || rps < 1 || !(durationS > 0) || !(trajectoryS > 0)) {
            throw new CliFailure("--replicas >= 2; --versions, --clients, --rps, --duration-s, --trajectory-s positive", 2);
        }
        BenchResults results = new BenchResults("router");
        Path work;
        try {
            work = Files.createTempDirectory("stitch-bench-router");
        } catch (IOException e) {
            throw new CliFailure("cannot create a scratch directory: " + e.getMessage());
        }
        try (RouterFleet fleet = new RouterFleet(work, modelSize, replicas);
             RouterProcess router = RouterProcess.start(fleet.urls(), work.resolve("router.log"))) {
            fleet.start(router.url(), work);
            fleet.awaitAll(0, Duration.ofSeconds(60));
            fleet.digests().put(0L, "");
            fleet.awaitAll(fleet.publish(), Duration.ofSeconds(60));
            router.awaitReplicas(replicas, http);
            measure(fleet, router, results, work);
        } catch (IOException | InterruptedException e) {
            throw new CliFailure("bench router: " + e.getMessage());
        } finally {
            ScratchDirectories.deleteQuietly(work, "bench router");
        }
        results.printTable(System.out, "phase", "path", "requests", "satisfiable", "conflicts_409", "rate_409", "mislabeled",
                "p50_ms", "p99_ms");
        if (json != null) {
            results.writeJson(json);
        }
    }

    private void measure(RouterFleet fleet, RouterProcess router, BenchResults results, Path work)
            throws IOException, InterruptedException {
        URI routerUrl = router.url();
        PinnedTally viaRouter409 = new PinnedTally();
        PinnedTally direct409 = new PinnedTally();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicInteger next = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            threads.add(Thread.ofVirtual().start(() -> trajectories(fleet, running, viaRouter409, () -> routerUrl)));
            threads.add(Thread.ofVirtual().start(() -> trajectories(fleet, running, direct409,
                    () -> URI.create(fleet.urls().get(Math.floorMod(next.getAndIncrement(), fleet.urls().size()))))));
        }
        for (int k = 0; k < versions; k++) {
            long v = fleet.publish();
            fleet.awaitAll(v, Duration.ofMinutes(3));
            System.out.printf(Locale.ROOT, "rolled version %d across %d replicas%n", v, replicas);
        }
        running.set(false);
        for (Thread t : threads) {
            t.join();
        }
        pinnedRow(results, "router", viaRouter409);
        pinnedRow(results, "direct", direct409);

        // Both paths warm up first: the router is a fresh JVM, and its JIT work is not a per-request cost.
        byte[] body = UNPINNED.getBytes(StandardCharsets.UTF_8);
        List<LoadGenerator> direct = new ArrayList<>();
        try (LoadGenerator viaRouter = new LoadGenerator("127.0.0.1", routerUrl.getPort(), "/generate", body, CONNECTIONS);
             LoadGenerator saturating = new LoadGenerator("127.0.0.1", routerUrl.getPort(), "/generate", body, CONCURRENCY)) {
            for (String u : fleet.urls()) {
                direct.add(new LoadGenerator("127.0.0.1", URI.create(u).getPort(), "/generate", body, CONNECTIONS));
            }
            saturating.closedLoop(WARMUP_S);
            viaRouter.openLoop(rps, WARMUP_S);
            spread(direct, WARMUP_S);
            // The two paths alternate in one-second slices, so that the noise of a shared machine (other
            // processes, the bench JVM's own collections) falls on both alike rather than on whichever ran later.
            int slices = Math.max(1, (int) Math.round(durationS));
            double slice = durationS / slices;
            java.util.stream.LongStream.Builder directNanos = java.util.stream.LongStream.builder();
            java.util.stream.LongStream.Builder routerNanos = java.util.stream.LongStream.builder();
            long routerCpuNanos = 0;
            long routerCompleted = 0;
            long routerErrors = 0;
            double routerSeconds = 0;
            for (int k = 0; k < slices; k++) {
                for (long l : spread(direct, slice)) {
                    directNanos.add(l);
                }
                long[] before = router.cpu();
                LoadGenerator.Result r = viaRouter.openLoop(rps, slice);
                routerCpuNanos += router.cpu()[0] - before[0];
                for (long l : r.latenciesNanos()) {
                    routerNanos.add(l);
                }
                routerCompleted += r.completed();
                routerErrors += r.errors();
                routerSeconds += r.elapsedSeconds();
            }
            long[] directLatency = directNanos.build().toArray();
            long[] routerLatency = routerNanos.build().toArray();
            long[] cpu1 = router.cpu();
            TimeUnit.MILLISECONDS.sleep((long) (routerSeconds * 1000));
            long[] cpu2 = router.cpu();
            // What the router spends with no request at all (its state long polls) is not charged to requests.
            long pacedCpu = Math.max(0, routerCpuNanos - (cpu2[0] - cpu1[0]));
            LoadGenerator.Result sat = saturating.closedLoop(durationS);
            long[] cpu3 = router.cpu();
            latencyRow(results, "direct", directLatency);
            latencyRow(results, "router", routerLatency);
            Map<String, Object> satRow = results.row();
            satRow.put("phase", "saturation");
            satRow.put("path", "router");
            satRow.put("requests", sat.completed());
            satRow.put("rps_achieved", round(sat.achievedRps()));
            long satRequests = Math.max(1, sat.completed() + sat.errors());
            double routerCpuMs = (cpu3[0] - cpu2[0]) / 1e6 / satRequests;
            double[] chain = chainCpuPerRequest(work, body);

            Map<String, Object> s = results.row();
            s.put("phase", "summary");
            s.put("replicas", replicas);
            s.put("router_409_rate", round(viaRouter409.rate()));
            s.put("direct_409_rate", round(direct409.rate()));
            s.put("mislabeled", viaRouter409.mislabeled.get() + direct409.mislabeled.get());
            s.put("held_previous_served", viaRouter409.heldPrevious.get());
            s.put("rps", rps);
            s.put("router_added_p50_ms", round(percentile(routerLatency, 0.5) - percentile(directLatency, 0.5)));
            s.put("router_added_p99_ms", round(percentile(routerLatency, 0.99) - percentile(directLatency, 0.99)));
            // The sidecar's target is set at saturation (bench proxy): the same measure here, whole process and
            // without the JIT compiler threads; the paced figure shows what a lightly loaded router spends.
            s.put("router_cpu_ms_per_request", round(routerCpuMs));
            s.put("router_cpu_ms_per_request_excl_jit", round((cpu3[1] - cpu2[1]) / 1e6 / satRequests));
            s.put("router_cpu_ms_per_request_paced", round(pacedCpu / 1e6 / Math.max(1, routerCompleted)));
            s.put("router_saturation_rps", round(sat.achievedRps()));
            // the same requests through router and sidecar: the router's cost against the sidecar's, in one window
            s.put("chain_router_cpu_ms_per_request", round(chain[0]));
            s.put("chain_router_cpu_ms_per_request_excl_jit", round(chain[1]));
            s.put("chain_sidecar_cpu_ms_per_request", round(chain[2]));
            s.put("chain_sidecar_cpu_ms_per_request_excl_jit", round(chain[3]));
            s.put("chain_rps", round(chain[4]));
            s.put("router_cpu_vs_sidecar", round(chain[0] / chain[2]));
            s.put("chain_router_added_p50_ms", round(chain[5]));
            s.put("chain_router_added_p99_ms", round(chain[6]));
            s.put("paced_errors", routerErrors);
            System.out.printf(Locale.ROOT, "409s among satisfiable pins: router %.4f, direct %.4f; held previous served %d; "
                            + "router adds p99 %.3f ms at %d rps; mislabeled %d%n",
                    viaRouter409.rate(), direct409.rate(), viaRouter409.heldPrevious.get(), (double) s.get("router_added_p99_ms"),
                    rps, (long) s.get("mislabeled"));
            System.out.printf(Locale.ROOT, "router CPU per request: %.4f ms at saturation over the fleet (%.0f req/s), "
                            + "%.4f ms at %d req/s; chained with a sidecar at %.0f req/s: router %.4f ms, sidecar %.4f ms "
                            + "(%.2fx); in front of that sidecar at %d req/s the router adds p50 %.3f ms, p99 %.3f ms%n",
                    routerCpuMs, sat.achievedRps(), (double) s.get("router_cpu_ms_per_request_paced"),
                    rps, chain[4], chain[0], chain[2], chain[0] / chain[2], rps, chain[5], chain[6]);
        } finally {
            direct.forEach(LoadGenerator::close);
        }
    }

    /**
     * The baseline of the CPU target, in the same run: a chain client → router → sidecar → reference engine, with
     * the router and the sidecar each a child process (the sidecar as {@code bench proxy} runs it), saturated by
     * the same load generator. Both see exactly the same requests at the same rate, so their CPU per request
     * compares the work each does for a request and nothing else.
     *
     * @return router CPU ms per request, the same without JIT threads, sidecar CPU ms per request, the same
     *         without JIT threads, the rate achieved, and the router's added p50 and p99 in ms over the sidecar
     *         alone at {@code --rps}
     */
    private double[] chainCpuPerRequest(Path work, byte[] body) throws IOException, InterruptedException {
        Path dir = Files.createDirectories(work.resolve("chain"));
        try (ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(ProxyBenchCommand.tinyModel(dir))).start();
             SidecarProcess sidecar = SidecarProcess.start(dir, engine.url(), "512m")) {
            sidecar.awaitReady(Duration.ofSeconds(60));
            try (RouterProcess router = RouterProcess.start(List.of("http://127.0.0.1:" + sidecar.port()),
                    dir.resolve("router.log"))) {
                router.awaitReplicas(1, http);
                try (LoadGenerator load = new LoadGenerator("127.0.0.1", router.url().getPort(), "/generate", body,
                        CONCURRENCY);
                     LoadGenerator viaRouter = new LoadGenerator("127.0.0.1", router.url().getPort(), "/generate", body,
                             CONNECTIONS);
                     LoadGenerator direct = new LoadGenerator("127.0.0.1", sidecar.port(), "/generate", body,
                             CONNECTIONS)) {
                    // fresh JVMs: warmed as long as the fleet's router had been before its saturation run
                    load.closedLoop(WARMUP_S + durationS);
                    long[] r0 = router.cpu();
                    long[] s0 = sidecar.cpuNanos();
                    LoadGenerator.Result r = load.closedLoop(durationS);
                    long[] r1 = router.cpu();
                    long[] s1 = sidecar.cpuNanos();
                    double n = Math.max(1, r.completed() + r.errors());
                    // Added latency over the same sidecar, paced, the two paths alternating in one-second slices.
                    viaRouter.openLoop(rps, WARMUP_S);
                    direct.openLoop(rps, WARMUP_S);
                    java.util.stream.LongStream.Builder d = java.util.stream.LongStream.builder();
                    java.util.stream.LongStream.Builder v = java.util.stream.LongStream.builder();
                    int slices = Math.max(1, (int) Math.round(durationS));
                    for (int k = 0; k < slices; k++) {
                        java.util.Arrays.stream(direct.openLoop(rps, durationS / slices).latenciesNanos()).forEach(d::add);
                        java.util.Arrays.stream(viaRouter.openLoop(rps, durationS / slices).latenciesNanos()).forEach(v::add);
                    }
                    long[] directNanos = d.build().toArray();
                    long[] routerNanos = v.build().toArray();
                    return new double[] {(r1[0] - r0[0]) / 1e6 / n, (r1[1] - r0[1]) / 1e6 / n,
                        (s1[0] - s0[0]) / 1e6 / n, (s1[1] - s0[1]) / 1e6 / n, r.achievedRps(),
                        percentile(routerNanos, 0.5) - percentile(directNanos, 0.5),
                        percentile(routerNanos, 0.99) - percentile(directNanos, 0.99)};
                }
            }
        }
    }

    /** Open-loop load at {@code --rps} in all, split evenly over the replicas; every request's latency. */
    private long[] spread(List<LoadGenerator> direct, double seconds) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        List<LoadGenerator.Result> out = Collections.synchronizedList(new ArrayList<>());
        for (LoadGenerator g : direct) {
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    out.add(g.openLoop((double) rps / direct.size(), seconds));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        return out.stream().flatMapToLong(r -> java.util.Arrays.stream(r.latenciesNanos())).toArray();
    }

    /** Agentic traffic: pin the newest served version for one trajectory, then start over. */
    private void trajectories(RouterFleet fleet, AtomicBoolean running, PinnedTally tally, java.util.function.Supplier<URI> target) {
        while (running.get()) {
            long pinned = fleet.served().last();
            long end = System.nanoTime() + (long) (trajectoryS * 1e9);
            while (running.get() && System.nanoTime() < end) {
                TreeSet<Long> served = fleet.served();
                boolean satisfiable = served.contains(pinned);
                try {
                    HttpResponse<String> r = http.send(generate(target.get(), pinned), HttpResponse.BodyHandlers.ofString());
                    tally.count(r, pinned, satisfiable, served.last(), fleet.digests());
                } catch (IOException e) {
                    tally.errors.incrementAndGet();
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private static HttpRequest generate(URI base, long pinned) {
        String constraint = ", \"weight_version\": {\"exact_version\": " + pinned + "}";
        return HttpRequest.newBuilder(base.resolve("/generate")).timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text\": \"bench\", \"sampling_params\": {\"max_new_tokens\": 1}"
                        + constraint + "}")).build();
    }

    private static void pinnedRow(BenchResults results, String path, PinnedTally t) {
        Map<String, Object> row = results.row();
        row.put("phase", "rolling");
        row.put("path", path);
        row.put("requests", t.requests.get());
        row.put("satisfiable", t.satisfiable.get());
        row.put("conflicts_409", t.conflicts.get());
        row.put("rate_409", round(t.rate()));
        row.put("mislabeled", t.mislabeled.get());
    }

    private static void latencyRow(BenchResults results, String path, long[] latencies) {
        Map<String, Object> row = results.row();
        row.put("phase", "overhead");
        row.put("path", path);
        row.put("requests", latencies.length);
        row.put("p50_ms", round(percentile(latencies, 0.5)));
        row.put("p99_ms", round(percentile(latencies, 0.99)));
    }

    private static double percentile(long[] nanos, double p) {
        if (nanos.length == 0) {
            return Double.NaN;
        }
        long[] sorted = nanos.clone();
        java.util.Arrays.sort(sorted);
        return sorted[Math.max(0, Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1))] / 1e6;
    }

    private static double round(double v) {
        return Double.isNaN(v) ? v : Math.round(v * 10000) / 10000.0;
    }

    /** What pinned requests got on one path. */
    private static final class PinnedTally {
        final AtomicLong requests = new AtomicLong();
        final AtomicLong satisfiable = new AtomicLong();
        final AtomicLong conflicts = new AtomicLong();
        final AtomicLong mislabeled = new AtomicLong();
        final AtomicLong heldPrevious = new AtomicLong();
        final AtomicLong errors = new AtomicLong();

        void count(HttpResponse<String> r, long pinned, boolean wasSatisfiable, long newest, Map<Long, String> digests)
                throws IOException {
            requests.incrementAndGet();
            if (!wasSatisfiable) {
                return;
            }
            satisfiable.incrementAndGet();
            if (r.statusCode() == 409) {
                conflicts.incrementAndGet();
                return;
            }
            if (r.statusCode() != 200) {
                errors.incrementAndGet();
                return;
            }
            long stamped = Long.parseLong(r.headers().firstValue("x-stitch-weight-version-start").orElse("-1"));
            String expected = digests.get(stamped);
            String actual = JSON.readTree(r.body()).path("meta_info").path("weights_digest").asText();
            if (stamped != pinned || expected != null && !expected.isEmpty() && !expected.equals(actual)) {
                mislabeled.incrementAndGet();
            }
            if (pinned < newest) {
                heldPrevious.incrementAndGet();
            }
        }

        double rate() {
            return satisfiable.get() == 0 ? 0 : conflicts.get() / (double) satisfiable.get();
        }
    }
}
