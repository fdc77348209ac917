package dev.stitch.bench.simulate;

import dev.stitch.bench.ScratchDirectories;
import dev.stitch.bench.BenchResults;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One simulation: builds the step, measures every backend/encoding through the real pipeline (and,
 * for backends a patched engine applies in place, the reference engine's in-place apply), then
 * extrapolates each measurement to the planned model, hosts and link rates, in host and engine mode.
 */
final class Simulation {
    private static final String NEXT_VERSION = "1";
    /** In-place applies timed per backend; the fastest is kept, as the one least disturbed by other work. */
    private static final int IN_PLACE_REPETITIONS = 3;

    private final SimulationPlan plan;
    private final Path work;
    /** Where progress lines go, or null for none. */
    private final PrintStream progress;

    Simulation(SimulationPlan plan, Path work, PrintStream progress) {
        this.plan = plan;
        this.work = work;
        this.progress = progress;
    }

    /**
     * A measured run: its costs, its pipeline result, and the reference engine's in-place apply of the
     * same version ({@link InPlaceApply#NONE} for backends the engine does not apply in place).
     */
    record Measured(CodecSpec spec, StageCosts costs, SimulationPipeline.Result result, InPlaceApply inPlace) {

        boolean appliedInPlace() {
            return !Double.isNaN(inPlace.wallS());
        }
    }

    /**
     * The fastest in-place apply of one version.
     *
     * @param wallS wall seconds from the apply request to the first response at v+1
     * @param cpuS  CPU seconds the engine's loading thread spent on that same apply
     */
    record InPlaceApply(double wallS, double cpuS) {
        static final InPlaceApply NONE = new InPlaceApply(Double.NaN, Double.NaN);
    }

    void run(BenchResults out) throws Exception {
        List<Measured> measured = new ArrayList<>();
        double measuredLinkMbps;
        long modelBytes;
        long elements;
        long changed;
        try (SimulatedVersion version = SimulatedVersion.generate(plan.measureBytes(), plan.density(), plan.chunks(), plan.seed())) {
            modelBytes = version.modelBytes();
            elements = version.elementCount();
            changed = version.changedElements();
            measuredLinkMbps = plan.scaleLink()
                    ? plan.linkMbps().getFirst() * modelBytes / plan.modelBytes()
                    : plan.linkMbps().getFirst();
            Path base = work.resolve("base-checkpoint");
            version.writeBaseCheckpoint(base);
            String digest = version.newDigest();
            try (RolloutEngine engine = RolloutEngine.boot(base)) {
                // Warm the engine's load path once, so the first backend's reload is not the JIT's.
                engine.reloadAndServe(base, "0", null);
                long started = System.nanoTime();
                int done = 0;
                for (CodecSpec spec : plan.codecs()) {
                    if (progress != null) {
                        double elapsed = (System.nanoTime() - started) / 1e9;
                        String eta = done == 0 ? "" : String.format(Locale.ROOT, ", ETA %.0f s",
                                elapsed / done * (plan.codecs().size() - done));
                        progress.printf(Locale.ROOT, "simulate: [%d/%d] %s, %s at %.3g MB/s%s%n", done + 1, plan.codecs().size(),
                                spec, SimulateCommand.human(modelBytes), measuredLinkMbps, eta);
                    }
                    warmUp(spec, version, base);
                    Path runDir = work.resolve(spec.toString().replace(':', '-'));
                    Path checkpoint = runDir.resolve("rollout-checkpoint");
                    copyTree(base, checkpoint);
                    SimulationPipeline pipeline = new SimulationPipeline(new ThrottledLink(measuredLinkMbps * 1e6, plan.rttS() * 1e3));
                    SimulationPipeline.Result r;
                    StageCosts costs;
                    try (ChunkCodec codec = ChunkCodecs.open(spec, version, checkpoint)) {
                        r = pipeline.run(codec, runDir.resolve("trainer-board"), runDir.resolve("rollout-board"),
                                () -> engine.reloadAndServe(checkpoint, NEXT_VERSION, digest));
                        // Per-core costs come from CPU time: on a shared machine wall time also counts waiting for a core.
                        costs = new StageCosts(spec.backend(), spec.encoding(), modelBytes, codec.encodeCpuNanos() / 1e9, 1,
                                r.bytes(), r.files(), codec.applyCpuNanos() / 1e9, 1);
                    }
                    InPlaceApply inPlace = ServeMode.engineAppliesInPlace(spec.backend())
                            ? measureInPlace(engine, base, runDir.resolve("rollout-board"), r.received(), digest)
                            : InPlaceApply.NONE;
                    measured.add(new Measured(spec, costs, r, inPlace));
                    ScratchDirectories.delete(runDir);
                    done++;
                }
            }
        }
        // The fastest reload is the one least disturbed by other work on this machine.
        double fastestReload = measured.stream().mapToDouble(m -> m.result().reloadS()).min().orElse(Double.NaN);
        double reloadGbps = plan.reloadGbps() != null ? plan.reloadGbps()
                : Double.isNaN(fastestReload) ? 1.0 : modelBytes / fastestReload / 1e9;

        double measuredDensity = (double) changed / elements;
        for (Measured m : measured) {
            SimulationPipeline.Result r = m.result();
            TimeToServeModel.Projection host = new TimeToServeModel.Projection(r.encodeS(), r.transferS(), r.applyS(),
                    r.reloadS(), 0, r.bytes(), r.files());
            Map<String, Object> row = out.row();
            identity(row, m.spec(), ServeMode.HOST, modelBytes / 2, measuredDensity, plan.linkMbps().getFirst(), false);
            row.put("measured_link_mbps", measuredLinkMbps);
            stages(row, host, r.timeToServeS(), 1, 1);
            row.put("encode_cpu_s", m.costs().encodeS());
            row.put("apply_cpu_s", m.costs().applyS());
            costs(row, m.costs());
            row.put("reload_gbps", modelBytes / r.reloadS() / 1e9);
            row.put("reload_gbps_source", "measured");
            if (m.appliedInPlace()) {
                // Engine mode skips the host apply: the pause follows the last file's arrival.
                TimeToServeModel.Projection engine = new TimeToServeModel.Projection(r.encodeS(), r.transferS(), 0, 0,
                        m.inPlace().wallS(), r.bytes(), r.files());
                Map<String, Object> e = out.row();
                identity(e, m.spec(), ServeMode.ENGINE, modelBytes / 2, measuredDensity, plan.linkMbps().getFirst(), false);
                e.put("measured_link_mbps", measuredLinkMbps);
                stages(e, engine, r.transferDoneS() + m.inPlace().wallS(), 1, 1);
                e.put("encode_cpu_s", m.costs().encodeS());
                e.put("in_place_apply_cpu_s", m.inPlace().cpuS());
                costs(e, m.costs());
                e.put("in_place_apply_s_per_gib_core", m.inPlace().cpuS() / (modelBytes / StageCosts.GIB));
            }
        }
        String reloadSource = plan.reloadGbps() != null ? "--reload-gbps" : "measured";
        for (double link : plan.linkMbps()) {
            HostProfile host = new HostProfile(plan.trainerCores(), plan.rolloutCores(), plan.memGbps(), plan.diskGbps(),
                    reloadGbps, link * 1e6, plan.rttS(), plan.chunks());
            for (Measured m : measured) {
                TimeToServeModel.Projection p = TimeToServeModel.project(m.costs(), plan.modelBytes(), plan.density(), 2, host);
                Map<String, Object> row = out.row();
                identity(row, m.spec(), ServeMode.HOST, plan.modelParams(), plan.density(), link, true);
                stages(row, p, p.pipelinedS(plan.chunks()), plan.trainerCores(), plan.rolloutCores());
                costs(row, m.costs());
                row.put("reload_gbps", reloadGbps);
                row.put("reload_gbps_source", reloadSource);
                if (m.appliedInPlace()) {
                    // CPU time, like host apply: on a shared machine wall time also counts waiting for a core.
                    double perGib = m.inPlace().cpuS() / (modelBytes / StageCosts.GIB);
                    TimeToServeModel.Projection e = TimeToServeModel.projectEngine(m.costs(), perGib, plan.modelBytes(),
                            plan.density(), 2, host);
                    Map<String, Object> engineRow = out.row();
                    identity(engineRow, m.spec(), ServeMode.ENGINE, plan.modelParams(), plan.density(), link, true);
                    stages(engineRow, e, e.pipelinedS(plan.chunks()), plan.trainerCores(), plan.rolloutCores());
                    costs(engineRow, m.costs());
                    engineRow.put("in_place_apply_s_per_gib_core", perGib);
                }
            }
        }
    }

    /**
     * Times the reference engine applying the version's {@code sparse_delta} files in place
     * ({@code load_format: "delta"}) until its first response at v+1 with the trainer's digest;
     * each repetition starts from the base weights, reloaded untimed.
     */
    private static InPlaceApply measureInPlace(RolloutEngine engine, Path base, Path rolloutBoard, List<String> files,
                                               String digest) throws IOException, InterruptedException {
        InPlaceApply fastest = null;
        for (int i = 0; i < IN_PLACE_REPETITIONS; i++) {
            engine.reloadAndServe(base, "0", null);
            long t0 = System.nanoTime();
            long cpu = engine.applyInPlaceAndServe(rolloutBoard, files, NEXT_VERSION, digest);
            InPlaceApply run = new InPlaceApply((System.nanoTime() - t0) / 1e9, cpu / 1e9);
            if (fastest == null || run.wallS() < fastest.wallS()) {
                fastest = run;
            }
        }
        return fastest;
    }

    /**
     * One untimed pass of the codec over an unthrottled link into a scratch checkpoint, so the
     * measured pass runs compiled code rather than the interpreter's first chunks.
     */
    private void warmUp(CodecSpec spec, SimulatedVersion version, Path base) throws Exception {
        Path runDir = work.resolve("warmup");
        Path checkpoint = runDir.resolve("rollout-checkpoint");
        copyTree(base, checkpoint);
        SimulationPipeline pipeline = new SimulationPipeline(new ThrottledLink(1e12, 0));
        try (ChunkCodec codec = ChunkCodecs.open(spec, version, checkpoint)) {
            pipeline.run(codec, runDir.resolve("trainer-board"), runDir.resolve("rollout-board"), () -> { });
        } finally {
            ScratchDirectories.delete(runDir);
        }
    }

    private static void identity(Map<String, Object> row, CodecSpec spec, ServeMode mode, long params, double density,
                                 double link, boolean extrapolated) {
        row.put("backend", spec.backend());
        row.put("encoding", spec.encoding());
        row.put("mode", mode.label());
        row.put("model_params", params);
        row.put("density", density);
        row.put("link_mbps", link);
        row.put("extrapolated", extrapolated);
    }

    private void stages(Map<String, Object> row, TimeToServeModel.Projection p, double timeToServe, int trainerCores,
                        int rolloutCores) {
        double slowest = p.slowestStageS();
        row.put("bytes", Math.round(p.bytes()));
        row.put("files", p.files());
        row.put("encode_s", p.encodeS());
        row.put("transfer_s", p.transferS());
        row.put("apply_s", p.applyS());
        row.put("reload_s", p.reloadS());
        row.put("in_place_apply_s", p.inPlaceApplyS());
        row.put("slowest_stage_s", slowest);
        row.put("time_to_serve_s", timeToServe);
        row.put("sequential_s", p.sequentialS());
        row.put("dominant_stage", p.dominantStage());
        double ratio = slowest > 0 ? (timeToServe - p.pauseS()) / slowest : 0;
        row.put("pipelined_ratio", ratio);
        row.put("meets_pipeline_target", timeToServe <= 1.2 * slowest + p.pauseS());
        row.put("chunks", plan.chunks());
        row.put("rtt_ms", plan.rttS() * 1e3);
        row.put("trainer_cores", trainerCores);
        row.put("rollout_cores", rolloutCores);
    }

    private static void costs(Map<String, Object> row, StageCosts c) {
        row.put("encode_s_per_gib_core", c.encodeCoreSecondsPerGib());
        row.put("apply_s_per_gib_core", c.applyCoreSecondsPerGib());
        row.put("bytes_per_gib", c.bytesPerGib());
        row.put("engine_applies_in_place", ServeMode.engineAppliesInPlace(c.backend()));
    }

    private static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (var files = Files.list(from)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, to.resolve(f.getFileName().toString()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }
}
