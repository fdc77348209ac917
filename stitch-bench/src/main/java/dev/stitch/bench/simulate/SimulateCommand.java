package dev.stitch.bench.simulate;

import dev.stitch.bench.ScratchDirectories;
import dev.stitch.cli.ByteSize;

import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.cli.CliFailure;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench simulate}: time-to-serve v+1 across a throttled wide-area link, measured with
 * the real encode, transfer and apply code at a small model size, then extrapolated to the given
 * model and hosts from the measured per-GiB costs.
 */
@Command(name = "simulate",
        description = {
            "Cross-datacenter simulation: time from the trainer's step end to the first response served at v+1.",
            "",
            "For full checkpoints and every delta backend/encoding, encode (trainer), transfer (a token-bucket link "
                + "with RTT per file) and apply (rollout host) run pipelined per chunk, then the engine reloads "
                + "(host mode, stock SGLang). It MEASURES that pipeline at --measure-size on this machine (one thread "
                + "per stage), then EXTRAPOLATES to --model-params from the measured per-GiB, per-core costs scaled "
                + "to the given core counts (rows marked extrapolated=true).",
            "",
            "For sparse_delta it also measures the reference engine applying the delta in place "
                + "(load_format=delta, the engine mode of a patched SGLang) and adds mode=engine rows: encode and "
                + "transfer pipelined, then the in-place apply instead of host apply and reload. disk_delta and "
                + "stitch_delta have no engine mode. Every row names its dominant_stage."
        },
        mixinStandardHelpOptions = true)
public final class SimulateCommand implements BenchSubcommand, Callable<Integer> {

    @Option(names = "--model-params", defaultValue = "70e9", paramLabel = "N",
            description = "Parameters of the model to extrapolate to (bf16, 2 bytes each); accepts 70e9 (default ${DEFAULT-VALUE}).")
    String modelParams;

    @Option(names = "--density", defaultValue = "0.03", paramLabel = "D",
            description = "Fraction of elements changed by the training step (default ${DEFAULT-VALUE}).")
    double density;

    @Option(names = "--link-mbps", defaultValue = "300", split = ",", paramLabel = "R",
            description = "Link rate(s) in MB/s (10^6 bytes per second), comma-separated; the first is used for the "
                    + "measured run, every one gets extrapolated rows (default ${DEFAULT-VALUE}).")
    List<Double> linkMbps;

    @Option(names = "--rtt-ms", defaultValue = "50", paramLabel = "T",
            description = "Round-trip time added once per file request, milliseconds (default ${DEFAULT-VALUE}).")
    double rttMs;

    @Option(names = "--trainer-cores", defaultValue = "32", paramLabel = "C",
            description = "Cores the trainer host gives the encoder in the extrapolation (default ${DEFAULT-VALUE}).")
    int trainerCores;

    @Option(names = "--rollout-cores", defaultValue = "16", paramLabel = "C",
            description = "Cores the rollout host gives the applier in the extrapolation (default ${DEFAULT-VALUE}).")
    int rolloutCores;

    @Option(names = "--measure-size", defaultValue = "256m", paramLabel = "SIZE",
            description = "Model size measured on this machine (k/m/g suffixes; default ${DEFAULT-VALUE}).")
    String measureSize;

    @Option(names = "--chunks", defaultValue = "16", paramLabel = "K",
            description = "Pipeline chunks (groups of whole tensors) a version is cut into (default ${DEFAULT-VALUE}).")
    int chunks;

    @Option(names = "--backends", split = ",", paramLabel = "B[:E]",
            defaultValue = "full,sparse_delta:deltas_zstd,disk_delta:xor,disk_delta:overwrite,stitch_delta:xor,stitch_delta:overwrite",
            description = "Backends and encodings to run, comma-separated (default ${DEFAULT-VALUE}; "
                    + "sparse_delta also takes indices and deltas).")
    List<String> backends;

    @Option(names = "--mem-gbps", defaultValue = "100", paramLabel = "GBPS",
            description = "Streaming memory bandwidth of each host in GB/s, the cap on encode and apply however many "
                    + "cores they get (default ${DEFAULT-VALUE}).")
    double memGbps;

    @Option(names = "--disk-gbps", defaultValue = "2", paramLabel = "GBPS",
            description = "Disk bandwidth in GB/s for writing the version on the trainer and reading it on the rollout "
                    + "host (default ${DEFAULT-VALUE}).")
    double diskGbps;

    /** The --reload-gbps default: an assumed stock SGLang full reload of a bf16 checkpoint from local NVMe or page cache. */
    static final double DEFAULT_RELOAD_GBPS = 2.0;
    /** The --reload-gbps value that takes the fastest reload measured with the reference engine instead. */
    static final String MEASURED = "measured";

    @Option(names = "--reload-gbps", defaultValue = "2", paramLabel = "GBPS|measured",
            description = "Engine full-reload bandwidth in GB/s of model for the extrapolated host-mode rows "
                    + "(default ${DEFAULT-VALUE}: an ASSUMPTION for a stock SGLang reload of a 70B bf16 checkpoint from "
                    + "local NVMe or page cache; replace it with your engine's figure). 'measured' takes the fastest "
                    + "reload measured with the reference engine on this machine instead, which is not what a GPU "
                    + "engine does.")
    String reloadGbps;

    @Option(names = "--scale-link", defaultValue = "false",
            description = "Measure with the link rate scaled by measure size / model size, so the measured run has the "
                    + "extrapolated model's proportions (slow: a full checkpoint then takes as long as the real one).")
    boolean scaleLink;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "SEED", description = "Seed of the synthetic model and step (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--work-dir", paramLabel = "DIR",
            description = "Where the trainer-side and rollout-side boards and checkpoints go (default: a temporary "
                    + "directory, deleted afterwards).")
    Path workDir;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"simulate\", \"results\": [...]} to FILE.")
    Path json;

    public SimulateCommand() {
    }

    @Override
    public Integer call() throws Exception {
        SimulationPlan plan = plan();
        BenchResults results = new BenchResults("simulate");
        Path work = workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("stitch-simulate");
        try {
            // Progress only on a terminal, so CI logs and JSON consumers see just the table.
            new Simulation(plan, work, System.console() != null ? System.err : null).run(results);
        } finally {
            if (workDir == null) {
                ScratchDirectories.delete(work);
            }
        }
        print(results, plan, System.out);
        if (json != null) {
            results.writeJson(json);
        }
        return 0;
    }

    SimulationPlan plan() {
        double params;
        try {
            params = Double.parseDouble(modelParams.trim());
        } catch (NumberFormatException e) {
            throw new CliFailure("--model-params must be a number of parameters such as 70e9, got '" + modelParams + "'");
        }
        if (!(params >= 1) || params > 1e15) {
            throw new CliFailure("--model-params must be between 1 and 1e15, got " + modelParams);
        }
        if (!(density > 0 && density <= 1)) {
            throw new CliFailure("--density must be a fraction in (0, 1], got " + density);
        }
        if (linkMbps.isEmpty()) {
            throw new CliFailure("--link-mbps needs at least one rate");
        }
        for (double r : linkMbps) {
            if (!(r > 0) || Double.isInfinite(r)) {
                throw new CliFailure("--link-mbps must be positive, got " + r);
            }
        }
        if (!(rttMs >= 0) || rttMs > 60_000) {
            throw new CliFailure("--rtt-ms must be between 0 and 60000, got " + rttMs);
        }
        if (trainerCores < 1 || rolloutCores < 1) {
            throw new CliFailure("--trainer-cores and --rollout-cores must be at least 1");
        }
        if (chunks < 1 || chunks > 1024) {
            throw new CliFailure("--chunks must be between 1 and 1024, got " + chunks);
        }
        if (!(memGbps > 0) || !(diskGbps > 0)) {
            throw new CliFailure("--mem-gbps and --disk-gbps must be positive");
        }
        Double reload = reloadGbps();
        long measureBytes = ByteSize.parse("--measure-size", measureSize);
        if (measureBytes < 1L << 20) {
            throw new CliFailure("--measure-size must be at least 1m, got " + measureSize);
        }
        List<CodecSpec> specs = new ArrayList<>();
        for (String b : backends) {
            try {
                CodecSpec s = CodecSpec.parse(b);
                if (!specs.contains(s)) {
                    specs.add(s);
                }
            } catch (IllegalArgumentException e) {
                throw new CliFailure("--backends: " + e.getMessage());
            }
        }
        return new SimulationPlan((long) params, density, List.copyOf(linkMbps), rttMs / 1e3, trainerCores, rolloutCores,
                measureBytes, chunks, specs, memGbps, diskGbps, reload, scaleLink, seed);
    }

    /** The --reload-gbps figure, or null for "measured". */
    private Double reloadGbps() {
        String text = reloadGbps.trim();
        if (text.equalsIgnoreCase(MEASURED)) {
            return null;
        }
        double gbps;
        try {
            gbps = Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new CliFailure("--reload-gbps must be a bandwidth in GB/s such as 2, or 'measured', got '" + reloadGbps + "'");
        }
        if (!(gbps > 0) || Double.isInfinite(gbps)) {
            throw new CliFailure("--reload-gbps must be positive, got " + reloadGbps);
        }
        return gbps;
    }

    static void print(BenchResults results, SimulationPlan plan, PrintStream out) {
        results.printTable(out, "backend", "encoding", "mode", "extrapolated", "model_params", "link_mbps", "bytes",
                "encode_s", "transfer_s", "apply_s", "reload_s", "in_place_apply_s", "time_to_serve_s", "dominant_stage",
                "sequential_s", "pipelined_ratio");
        out.println();
        Map<String, Object> any = results.rows().isEmpty() ? Map.of() : results.rows().getFirst();
        long measuredBytes = 2 * ((Number) any.getOrDefault("model_params", plan.measureBytes() / 2)).longValue();
        out.printf(Locale.ROOT, "Measured rows (extrapolated=false): a real pipeline on this machine, %s of bf16 at density %s,%n",
                human(measuredBytes), plan.density());
        out.printf(Locale.ROOT, "one thread per stage, link %s MB/s%s with %.0f ms RTT per file, reload = reference engine%n",
                any.getOrDefault("measured_link_mbps", plan.linkMbps().getFirst()), plan.scaleLink() ? " (scaled)" : "",
                plan.rttS() * 1e3);
        out.println("/update_weights_from_disk + first /generate stamped v+1 with the trainer's weights digest.");
        out.printf(Locale.ROOT, "Extrapolated rows (extrapolated=true): %.3g parameters; measured CPU seconds per GiB (one core) divided by%n",
                (double) plan.modelParams());
        out.printf(Locale.ROOT, "%d trainer / %d rollout cores, capped by %.0f GB/s memory (docs/performance-targets.md §7.2 traffic) and %.1f GB/s disk;%n",
                plan.trainerCores(), plan.rolloutCores(), plan.memGbps(), plan.diskGbps());
        out.printf(Locale.ROOT, "transfer = bytes / link + RTT per file; time_to_serve = slowest pipelined stage + the other stages'%n");
        out.printf(Locale.ROOT, "first/last chunk (%d chunks) + the engine's pause; sequential_s is the plain sum for comparison.%n",
                plan.chunks());
        out.println("pipelined_ratio = (time_to_serve - pause) / slowest stage; the target is <= 1.2.");
        if (plan.reloadGbps() != null) {
            out.printf(Locale.ROOT, "mode=host (stock SGLang): pipelined encode, transfer, host apply; pause = full reload = model bytes / "
                    + "%.2f GB/s,%n", plan.reloadGbps());
            out.printf(Locale.ROOT, "an ASSUMPTION (--reload-gbps%s): replace it with your engine's measured reload figure.%n",
                    plan.reloadGbps() == DEFAULT_RELOAD_GBPS ? " default" : "");
        } else {
            out.printf(Locale.ROOT, "mode=host (stock SGLang): pipelined encode, transfer, host apply; pause = full reload = model bytes / "
                    + "%.2f GB/s,%n", extrapolatedReloadGbps(results));
            out.println("the fastest reload measured with the reference engine (--reload-gbps measured), not a GPU engine's figure.");
        }
        out.println("mode=engine (patched SGLang, load_format=delta): pipelined encode, transfer; pause = in-place apply = model GiB");
        out.println("x the reference engine's in-place CPU seconds per GiB at this density (in_place_apply_s_per_gib_core: its loading");
        out.println("thread in the fastest of 3 applies measured here; one thread, not divided by cores). Measured engine rows: the");
        out.println("same run's last file across the link + that apply's wall time. Only sparse_delta has engine mode; disk_delta and");
        out.println("stitch_delta are host mode only, and a full checkpoint is a reload in either mode.");
        out.println("dominant_stage = the longest of encode, transfer, apply, reload, in_place_apply.");
    }

    private static double extrapolatedReloadGbps(BenchResults results) {
        for (Map<String, Object> r : results.rows()) {
            if (Boolean.TRUE.equals(r.get("extrapolated")) && r.get("reload_gbps") instanceof Number n) {
                return n.doubleValue();
            }
        }
        return Double.NaN;
    }

    static String human(long bytes) {
        if (bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

}
