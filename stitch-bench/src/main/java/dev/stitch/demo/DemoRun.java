package dev.stitch.demo;

import dev.stitch.bench.ScratchDirectories;
import dev.stitch.cli.ByteSize;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sync.CommitMode;
import dev.stitch.sync.SyncConfig;
import dev.stitch.kernels.Kernels;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.Weights;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One demo run, wired from the public entry points only: {@link SyntheticModel} written as the base
 * HF checkpoint, a {@link FilesystemBulletinBoard}, the {@link WeightPublisher} seeded from that
 * checkpoint, a reference engine booted on it ({@link EngineProcess}), the sidecar in front of the engine, and
 * {@link RolloutClients} talking HTTP to the sidecar's port.
 */
final class DemoRun {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration CATCH_UP_TIMEOUT = Duration.ofSeconds(120);

    /** Everything the command line decides. */
    record Options(long size, double density, TrainerStep.Pattern pattern, int versions, String mode, String backend,
                   String commitMode, int pinnedClients, int boundedClients, long staleness, long intervalMs,
                   double tokenLatencyMs, int maxNewTokens, int threads, long seed, Path workDir, boolean keep,
                   boolean childEngine) {
    }

    private final Options options;
    private final PrintStream out;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    DemoRun(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    DemoSummary run() throws IOException, InterruptedException {
        long started = System.nanoTime();
        boolean created = options.workDir() == null;
        Path work = created ? Files.createTempDirectory("stitch-demo-") : Files.createDirectories(options.workDir());
        try {
            return runIn(work, started);
        } finally {
            http.close();
            if (options.keep()) {
                out.println("kept the board and checkpoints under " + work);
            } else if (created) {
                ScratchDirectories.delete(work);
            } else {
                for (String sub : List.of("board", "base", "local", "sidecar-state")) {
                    ScratchDirectories.delete(work.resolve(sub));
                }
            }
        }
    }

    private DemoSummary runIn(Path work, long started) throws IOException, InterruptedException {
        Path boardDir = work.resolve("board");
        Path baseDir = work.resolve("base");
        Path localDir = work.resolve("local");
        try (SyntheticModel model = SyntheticModel.generate(options.size(), options.seed())) {
            header(model);
            long t = System.nanoTime();
            long fullBytes = model.writeCheckpoint(baseDir);
            out.printf(Locale.ROOT, "base checkpoint written (%s, %.0f MB/s)%n", ByteSize.human(fullBytes),
                    fullBytes / 1e6 / Math.max(1e-9, (System.nanoTime() - t) / 1e9));
            FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardDir, null, BoardOptions.defaults());
            Map<Long, String> trainerDigests = RolloutClients.newDigestTable();
            trainerDigests.put(0L, WeightsDigest.of(model.tensors()));
            AtomicLong newestPublished = new AtomicLong(0);
            TrainerStep step = new TrainerStep(options.density(), options.pattern(), options.seed());
            List<DemoSummary.VersionRecord> records = new ArrayList<>();

            try (EngineProcess engine = EngineProcess.start(options.childEngine(), baseDir, options.tokenLatencyMs());
                 Sidecar sidecar = startSidecar(boardDir, baseDir, localDir, work.resolve("sidecar-state"), engine);
                 WeightPublisher publisher = publisher(board, baseDir);
                 Weights weights = model.weights()) {
                URI sidecarUrl = URI.create("http://127.0.0.1:" + sidecar.port());
                awaitReady(sidecarUrl);
                out.printf(Locale.ROOT, "sidecar ready on %s in front of the %s on %s%n", sidecarUrl, engine.describe(), engine.url());
                RolloutClients clients = new RolloutClients(sidecarUrl, newestPublished::get, trainerDigests,
                        options.pinnedClients(), options.boundedClients(), options.staleness(), options.maxNewTokens());
                clients.start();
                out.printf(Locale.ROOT, "%n%7s  %12s  %7s  %11s  %9s  %10s  %10s  %9s  %9s%n", "version", "changed", "density",
                        "bytes", "encode ms", "publish ms", "catch-up ms", "apply ms", "reload ms");
                long loopStart = System.nanoTime();
                try {
                    for (long v = 1; v <= options.versions(); v++) {
                        long t0 = System.nanoTime();
                        step.apply(model.tensors(), v);
                        trainerDigests.put(v, WeightsDigest.of(model.tensors()));
                        PublishResult result = publisher.publish(v, weights);
                        if (result.weightsDigest() != null && !result.weightsDigest().equals(trainerDigests.get(v))) {
                            throw new IllegalStateException("publisher digest " + result.weightsDigest()
                                    + " differs from the trainer's " + trainerDigests.get(v) + " for version " + v);
                        }
                        newestPublished.set(v);
                        long published = System.nanoTime();
                        wake(sidecarUrl, v);
                        awaitVersion(sidecarUrl, v);
                        double catchUpMs = (System.nanoTime() - published) / 1e6;
                        double[] sync = syncTimes(sidecarUrl, v);
                        DemoSummary.VersionRecord r = new DemoSummary.VersionRecord(v, result.changedElements(), result.density(),
                                result.bytesWritten(), result.backend(),
                                (result.timings().diffNanos() + result.timings().encodeNanos()) / 1e6,
                                result.timings().publishSeconds() * 1e3, catchUpMs, sync[0], sync[1]);
                        records.add(r);
                        out.printf(Locale.ROOT, "%7d  %12d  %6.2f%%  %11s  %9.0f  %10.0f  %11.0f  %9s  %9s%n", v, r.changedElements(),
                                100 * r.density(), ByteSize.human(r.bytesWritten()), r.encodeMs(), r.publishMs(), r.catchUpMs(),
                                DemoSummary.ms(r.applyMs()), DemoSummary.ms(r.reloadMs()));
                        eta(v, loopStart);
                        long left = options.intervalMs() - (System.nanoTime() - t0) / 1_000_000;
                        if (left > 0) {
                            Thread.sleep(left);
                        }
                    }
                    // Let the last version serve traffic too before the clients stop.
                    Thread.sleep(Math.max(options.intervalMs(), 300));
                } finally {
                    clients.close();
                }
                String engineDigest = servedDigest(sidecarUrl, options.versions());
                return new DemoSummary(options.mode(), options.backend(), options.commitMode(), options.pattern().toString(),
                        options.density(), model.byteSize(), fullBytes, records, clients.tally(),
                        trainerDigests.get((long) options.versions()), engineDigest, (System.nanoTime() - started) / 1e9);
            }
        }
    }

    /** On a terminal, an estimate of the time left on stderr (stdout keeps the table clean). */
    private void eta(long done, long loopStart) {
        if (System.console() == null || done >= options.versions()) {
            return;
        }
        double perVersion = (System.nanoTime() - loopStart) / 1e9 / done;
        System.err.printf(Locale.ROOT, "  %d of %d versions, about %.0f s left%n", done, options.versions(),
                perVersion * (options.versions() - done));
    }

    private void header(SyntheticModel model) {
        out.println("stitch demo: trainer -> bulletin board -> sidecar -> reference engine, with rollout clients");
        out.printf(Locale.ROOT, "  model     %s of bf16 in %d tensors (hidden %d, %d layers), seed %d%n", ByteSize.human(model.byteSize()),
                model.specs().size(), model.hiddenSize(), model.layerCount(), options.seed());
        out.printf(Locale.ROOT, "  trainer   %d versions, %.2f%% of elements per step (%s), backend %s%n", options.versions(),
                100 * options.density(), options.pattern(), options.backend());
        out.printf(Locale.ROOT, "  sidecar   %s mode, %s commits%n", options.mode(), options.commitMode());
        out.printf(Locale.ROOT, "  clients   %d pinned (exact_version), %d bounded (min_required_version = newest - %d)%n",
                options.pinnedClients(), options.boundedClients(), options.staleness());
        out.printf(Locale.ROOT, "  kernels   %s (%s)%n", Kernels.get().implementation(), Kernels.get().isa());
    }

    /**
     * The sidecar as {@code stitch sidecar} builds it, listening on a free loopback port. Host mode gets a
     * local checkpoint copy of the base; engine mode lets the engine apply sparse_delta files itself.
     * The poll is short because a demo's versions arrive every few hundred milliseconds.
     */
    private Sidecar startSidecar(Path boardDir, Path baseDir, Path localDir, Path stateDir, EngineProcess engine) {
        URI upstream = URI.create(engine.url());
        ProxyServer.Config proxy = ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0).withIoThreads(1);
        SyncConfig sync = SyncConfig.defaults()
                .withCommitMode(CommitMode.parse(options.commitMode()))
                .withPolling(0.5, 0.05)
                .withDrain(10, 5)
                .withBackoff(0.2, 2)
                .withBoot(null, 0, options.mode().equals("host") ? stateDir : null);
        SglangSettings engineSettings = SglangSettings.of(upstream, boardDir);
        if (options.mode().equals("host")) {
            engineSettings = engineSettings.withHostCheckpoints(localDir, baseDir);
        }
        SidecarConfig config = new SidecarConfig(proxy, sync, boardDir, BoardLayout.STITCH, options.mode(), engineSettings, "demo");
        return Sidecar.start(config, "stitch-demo");
    }

    /** The trainer's publisher, seeded from the checkpoint the engine boots with; full-only is the fallback. */
    private WeightPublisher publisher(FilesystemBulletinBoard board, Path baseDir) throws IOException {
        DeltaFormat first = DeltaFormat.parse(options.backend());
        return WeightPublisher.builder()
                .board(board)
                .backends(first == DeltaFormat.FULL ? List.of(DeltaFormat.FULL) : List.of(first, DeltaFormat.FULL))
                .threads(options.threads())
                .baseModel("stitch-demo/synthetic-llama")
                .metadata("trainer", "stitch demo")
                .seedFrom(baseDir)
                .build();
    }

    private void awaitReady(URI sidecar) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + CATCH_UP_TIMEOUT.toNanos();
        while (true) {
            try {
                HttpResponse<String> r = get(sidecar.resolve("/health"));
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the sidecar did not become ready within " + CATCH_UP_TIMEOUT.toSeconds() + " s: "
                        + get(sidecar.resolve("/server_info")).body());
            }
            Thread.sleep(20);
        }
    }

    /** The trainer's notification to replicas that a version exists (sidecars also find it by polling). */
    private void wake(URI sidecar, long version) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(sidecar.resolve("/rpc_sync_from_bulletin_board"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"target_version\": " + version + "}"))
                .build();
        HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("sidecar refused the wake: HTTP " + r.statusCode() + " " + r.body());
        }
    }

    private void awaitVersion(URI sidecar, long version) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + CATCH_UP_TIMEOUT.toNanos();
        int polls = 0;
        while (true) {
            JsonNode v = JSON.readTree(get(sidecar.resolve("/get_weight_version")).body());
            if (Long.parseLong(v.path("weight_version").asText("-1")) >= version) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the sidecar did not reach version " + version + " within "
                        + CATCH_UP_TIMEOUT.toSeconds() + " s: " + get(sidecar.resolve("/server_info")).body());
            }
            if (++polls % 200 == 0) {
                // A sidecar that keeps failing will not catch up: say why instead of waiting out the timeout.
                JsonNode info = JSON.readTree(get(sidecar.resolve("/server_info")).body());
                if (info.path("consecutive_errors").asInt() >= 3) {
                    throw new IOException("the sidecar cannot reach version " + version + ": "
                            + info.path("last_sync_error").asText("unknown error"));
                }
            }
            Thread.sleep(5);
        }
    }

    /**
     * Stage (host apply) and commit (engine reload) times of the sidecar pass that reached {@code version},
     * in ms, -1 when absent. The version flips inside the commit, a moment before the pass records its
     * metrics, so this waits briefly for metrics whose {@code target_version} is {@code version}.
     */
    private double[] syncTimes(URI sidecar, long version) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        JsonNode metrics;
        do {
            metrics = JSON.readTree(get(sidecar.resolve("/server_info")).body()).path("metrics");
            if (metrics.path("target_version").asLong(-1) >= version && metrics.has("commit_s")) {
                return new double[] {millis(metrics.path("stage_s")), millis(metrics.path("commit_s"))};
            }
            Thread.sleep(5);
        } while (System.nanoTime() < deadline);
        return new double[] {-1, -1};
    }

    private static double millis(JsonNode seconds) {
        return seconds.isNumber() ? seconds.asDouble() * 1e3 : -1;
    }

    /** The digest the engine reports for a request pinned to {@code version}, through the sidecar. */
    private String servedDigest(URI sidecar, long version) throws IOException, InterruptedException {
        String body = "{\"text\": \"final check\", \"sampling_params\": {\"max_new_tokens\": 1}, "
                + "\"weight_version\": {\"exact_version\": " + version + "}}";
        HttpRequest req = HttpRequest.newBuilder(sidecar.resolve("/generate"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
        HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("final pinned request failed: HTTP " + r.statusCode() + " " + r.body());
        }
        return JSON.readTree(r.body()).path("meta_info").path("weights_digest").asText(null);
    }

    private HttpResponse<String> get(URI uri) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
