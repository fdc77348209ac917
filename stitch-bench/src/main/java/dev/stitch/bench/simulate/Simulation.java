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
 * One simulation: builds the step, measures every backend/encoding through the real pipeline, then
 * extrapolates each measurement to the planned model, hosts and link rates.
 */
final class Simulation {
    private static final String NEXT_VERSION = "1";

    private final SimulationPlan plan;
    private final Path work;
    /** Where progress lines go, or null for none. */
    private final PrintStream progress;

    Simulation(SimulationPlan plan, Path work, PrintStream progress) {
        this.plan = plan;
        this.work = work;
        this.progress = progress;
    }

    /** A measured run: its costs and pipeline result. */
    record Measured(CodecSpec spec, StageCosts costs, SimulationPipeline.Result result) {
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
                    measured.add(new Measured(spec, costs, r));
                    ScratchDirectories.delete(runDir);
                    done++;
                }
            }
        }
        // The fastest reload is the one least disturbed by other work on this machine.
        double fastestReload = measured.stream().mapToDouble(m -> m.result().reloadS()).min().orElse(Double.NaN);
        double reloadGbps = plan.reloadGbps() != null ? plan.reloadGbps()
                : Double.isNaN(fastestReload) ? 1.0 : modelBytes / fastestReload / 1e9;

        for (Measured m : measured) {
            SimulationPipeline.Result r = m.result();
            Map<String, Object> row = out.row();
            identity(row, m.spec(), modelBytes / 2, (double) changed / elements, plan.linkMbps().getFirst(), false);
            row.put("measured_link_mbps", measuredLinkMbps);
            stages(row, r.bytes(), r.files(), r.encodeS(), r.transferS(), r.applyS(), r.reloadS(), r.slowestStageS(),
                    r.timeToServeS(), r.sequentialS());
            row.put("trainer_cores", 1);
            row.put("rollout_cores", 1);
            row.put("encode_cpu_s", m.costs().encodeS());
            row.put("apply_cpu_s", m.costs().applyS());
            costs(row, m.costs(), modelBytes / r.reloadS() / 1e9);
        }
        for (double link : plan.linkMbps()) {
            HostProfile host = new HostProfile(plan.trainerCores(), plan.rolloutCores(), plan.memGbps(), plan.diskGbps(),
                    reloadGbps, link * 1e6, plan.rttS(), plan.chunks());
            for (Measured m : measured) {
                TimeToServeModel.Projection p = TimeToServeModel.project(m.costs(), plan.modelBytes(), plan.density(), 2, host);
                Map<String, Object> row = out.row();
                identity(row, m.spec(), plan.modelParams(), plan.density(), link, true);
                stages(row, Math.round(p.bytes()), p.files(), p.encodeS(), p.transferS(), p.applyS(), p.reloadS(),
                        p.slowestStageS(), p.pipelinedS(plan.chunks()), p.sequentialS());
                row.put("trainer_cores", plan.trainerCores());
                row.put("rollout_cores", plan.rolloutCores());
                costs(row, m.costs(), reloadGbps);
            }
        }
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

    private void identity(Map<String, Object> row, CodecSpec spec, long params, double density, double link, boolean extrapolated) {
        row.put("backend", spec.backend());
        row.put("encoding", spec.encoding());
        row.put("model_params", params);
        row.put("density", density);
        row.put("link_mbps", link);
        row.put("extrapolated", extrapolated);
    }

    private void stages(Map<String, Object> row, long bytes, int files, double encodeS, double transferS, double applyS,
                        double reloadS, double slowest, double timeToServe, double sequential) {
        row.put("bytes", bytes);
        row.put("files", files);
        row.put("encode_s", encodeS);
        row.put("transfer_s", transferS);
        row.put("apply_s", applyS);
        row.put("reload_s", reloadS);
        row.put("slowest_stage_s", slowest);
        row.put("time_to_serve_s", timeToServe);
        row.put("sequential_s", sequential);
        double ratio = slowest > 0 ? (timeToServe - reloadS) / slowest : 0;
        row.put("pipelined_ratio", ratio);
        row.put("meets_pipeline_target", timeToServe <= 1.2 * slowest + reloadS);
        row.put("chunks", plan.chunks());
        row.put("rtt_ms", plan.rttS() * 1e3);
    }

    private static void costs(Map<String, Object> row, StageCosts c, double reloadGbps) {
        row.put("encode_s_per_gib_core", c.encodeCoreSecondsPerGib());
        row.put("apply_s_per_gib_core", c.applyCoreSecondsPerGib());
        row.put("bytes_per_gib", c.bytesPerGib());
        row.put("reload_gbps", reloadGbps);
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
