package dev.stitch.bench.simulate;

import dev.stitch.bench.BenchResults;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
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
                for (CodecSpec spec : plan.codecs()) {
                    progress.printf(Locale.ROOT, "simulate: measuring %s on %s at %.3g MB/s%n", spec,
                            SimulateCommand.human(modelBytes), measuredLinkMbps);
                    Path runDir = work.resolve(spec.toString().replace(':', '-'));
                    Path checkpoint = runDir.resolve("rollout-checkpoint");
                    copyTree(base, checkpoint);
                    SimulationPipeline pipeline = new SimulationPipeline(new ThrottledLink(measuredLinkMbps * 1e6, plan.rttS() * 1e3));
                    SimulationPipeline.Result r;
                    try (ChunkCodec codec = ChunkCodecs.open(spec, version, checkpoint)) {
                        r = pipeline.run(codec, runDir.resolve("trainer-board"), runDir.resolve("rollout-board"),
                                () -> engine.reloadAndServe(checkpoint, NEXT_VERSION, digest));
                    }
                    measured.add(new Measured(spec, new StageCosts(spec.backend(), spec.encoding(), modelBytes, r.encodeS(), 1,
                            r.bytes(), r.files(), r.applyS(), 1), r));
                    SimulateCommand.deleteTree(runDir);
                }
            }
        }
        double[] reloads = measured.stream().mapToDouble(m -> m.result().reloadS()).sorted().toArray();
        double reloadGbps = plan.reloadGbps() != null ? plan.reloadGbps()
                : reloads.length == 0 ? 1.0 : modelBytes / median(reloads) / 1e9;

        for (Measured m : measured) {
            SimulationPipeline.Result r = m.result();
            Map<String, Object> row = out.row();
            identity(row, m.spec(), modelBytes / 2, (double) changed / elements, plan.linkMbps().getFirst(), false);
            row.put("measured_link_mbps", measuredLinkMbps);
            stages(row, r.bytes(), r.files(), r.encodeS(), r.transferS(), r.applyS(), r.reloadS(), r.slowestStageS(),
                    r.timeToServeS(), r.sequentialS());
            row.put("trainer_cores", 1);
            row.put("rollout_cores", 1);
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

    static double median(double[] sorted) {
        double[] s = sorted.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
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
