package dev.stitch.bench.kernels;

import dev.stitch.cli.ByteSize;

import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.cli.CliFailure;
import dev.stitch.kernels.CpuFeatures;
import dev.stitch.kernels.Kernels;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench kernels}: the encode and apply kernels against the memory-traffic floor
 * measured in the same run (docs/performance-targets.md §7.2-7.5), through JMH's Runner API.
 */
@Command(name = "kernels",
        description = {
            "Fused encode (diff + gather + snapshot update) and apply (escaped-gap scatter) kernels on",
            "the bf16 workload of docs/performance-targets.md §7.1, native and Java, 1 and 2 threads, each as a",
            "fraction of the memory-traffic floor (streaming read/fill) measured in the same run."
        },
        mixinStandardHelpOptions = true)
public final class KernelsBenchCommand implements BenchSubcommand, Runnable {

    @Option(names = "--size", defaultValue = "1g", description = "Model bytes of bf16 (k/m/g suffixes). Default: ${DEFAULT-VALUE}.")
    String size;

    @Option(names = "--density", split = ",", defaultValue = "0.001,0.01,0.03,0.1",
            description = "Fractions of changed elements, comma-separated. Default: ${DEFAULT-VALUE}.")
    List<Double> densities;

    @Option(names = "--impl", split = ",", defaultValue = "native,java",
            description = "Kernel implementations to measure: native, java. Default: ${DEFAULT-VALUE}.")
    List<String> impls;

    @Option(names = "--threads", split = ",", defaultValue = "1,2", description = "Thread counts. Default: ${DEFAULT-VALUE}.")
    List<Integer> threads;

    @Option(names = "--iterations", defaultValue = "7", description = "Timed repetitions per measurement (median, min, max reported). Default: ${DEFAULT-VALUE}.")
    int iterations;

    @Option(names = "--warmup", defaultValue = "1", description = "Untimed warm-up repetitions per measurement. Default: ${DEFAULT-VALUE}.")
    int warmup;

    @Option(names = "--fork", description = "Run every measurement in a fresh JVM (JMH fork) instead of this one; slower, as each fork regenerates the workload.")
    boolean fork;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the rows as JSON: {\"benchmark\": \"kernels\", \"results\": [...]}.")
    Path json;

    public KernelsBenchCommand() {
    }

    /** One measurement's wall-clock timings in seconds, and the median CPU time of the benchmark thread (NaN when unknown). */
    record Timing(double median, double min, double max, double cpuMedian) {
    }

    @Override
    public void run() {
        long bytes;
        try {
            bytes = ByteSize.parse(size);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--size: " + e.getMessage());
        }
        if (bytes < 1L << 20 || bytes % 64 != 0) {
            throw new CliFailure("--size must be at least 1m and a multiple of 64 bytes, got " + size);
        }
        for (double d : densities) {
            if (!(d >= 0 && d <= 1)) {
                throw new CliFailure("--density values are fractions in [0, 1], got " + d);
            }
        }
        for (int t : threads) {
            if (t < 1 || t > 256) {
                throw new CliFailure("--threads values must be between 1 and 256, got " + t);
            }
        }
        if (iterations < 1 || warmup < 0) {
            throw new CliFailure("--iterations must be at least 1 and --warmup at least 0");
        }
        List<String> implList = new ArrayList<>();
        for (String impl : impls) {
            String i = impl.trim().toLowerCase(Locale.ROOT);
            if (!i.equals("native") && !i.equals("java")) {
                throw new CliFailure("--impl values are native or java, got '" + impl + "'");
            }
            if (i.equals("native") && !Kernels.nativeAvailable()) {
                System.err.println("stitch: native kernels unavailable, measuring Java only (" + String.join("; ", Kernels.loaderAttempts()) + ")");
                continue;
            }
            implList.add(i);
        }
        if (implList.isEmpty()) {
            throw new CliFailure("no kernel implementation left to measure");
        }

        PrintStream out = System.out;
        PrintStream progress = System.console() != null ? System.err : null;
        out.printf(Locale.ROOT, "cpu: %s, %d cores; isa: %s%n", CpuFeatures.model(), CpuFeatures.cores(), CpuFeatures.describeFlags());
        out.printf(Locale.ROOT, "kernels: native %s, java %s; floor streams with %s %s%n",
            Kernels.nativeAvailable() ? Kernels.nativeKernels().isa() : "unavailable", Kernels.java().isa(),
            Kernels.get().implementation(), Kernels.get().isa());

        int total = densities.size() * (2 + implList.size() * threads.size() * 2);
        Progress bar = new Progress(progress, total);
        BenchResults results = new BenchResults("kernels");
        try {
            for (double density : densities) {
                // The floor is re-measured beside each density's kernels, so load drifting on a shared machine hits both alike.
                Timing read = measure(FloorBenchmarks.class, "read", Map.of("size", ByteSize.exact(bytes)), bar, "floor read");
                Timing fill = measure(FloorBenchmarks.class, "fill", Map.of("size", ByteSize.exact(bytes)), bar, "floor fill");
                TrafficFloor floor = new TrafficFloor(2.0 * bytes / read.median() / 1e9, bytes / fill.median() / 1e9);
                TrafficFloor cpuFloor = new TrafficFloor(2.0 * bytes / read.cpuMedian() / 1e9, bytes / fill.cpuMedian() / 1e9);
                out.printf(Locale.ROOT, "floor at p=%s: B_r %.2f GB/s (read %s twice), B_w %.2f GB/s; by CPU time B_r %.2f, B_w %.2f GB/s%n",
                    density, floor.readGbps(), ByteSize.exact(bytes), floor.writeGbps(), cpuFloor.readGbps(), cpuFloor.writeGbps());
                for (String phase : List.of("encode", "apply")) {
                    Map<String, Object> row = results.row();
                    row.put("kernel", "floor");
                    row.put("phase", phase);
                    row.put("impl", Kernels.get().implementation());
                    row.put("threads", 1);
                    row.put("density", density);
                    row.put("size_bytes", bytes);
                    row.put("gbps_model", phase.equals("encode") ? floor.encodeGbps(2, density) : floor.applyGbps(2, density));
                    row.put("floor_fraction", 1.0);
                    row.put("read_gbps", floor.readGbps());
                    row.put("write_gbps", floor.writeGbps());
                    putIfFinite(row, "cpu_gbps_model", phase.equals("encode") ? cpuFloor.encodeGbps(2, density) : cpuFloor.applyGbps(2, density));
                }
                for (String impl : implList) {
                    for (int t : threads) {
                        for (String phase : List.of("encode", "apply")) {
                            Map<String, String> params = Map.of("size", ByteSize.exact(bytes), "density", Double.toString(density),
                                "impl", impl, "threads", Integer.toString(t));
                            Timing timing = measure(KernelBenchmarks.class, phase, params, bar,
                                String.format(Locale.ROOT, "%s %s %dt p=%s", phase, impl, t, density));
                            double gbps = bytes / timing.median() / 1e9;
                            double floorGbps = phase.equals("encode") ? floor.encodeGbps(2, density) : floor.applyGbps(2, density);
                            Map<String, Object> row = results.row();
                            row.put("kernel", phase);
                            row.put("phase", phase);
                            row.put("impl", impl);
                            row.put("isa", impl.equals("native") ? Kernels.nativeKernels().isa() : Kernels.java().isa());
                            row.put("threads", t);
                            row.put("density", density);
                            row.put("size_bytes", bytes);
                            row.put("nnz", KernelWorkload.get(bytes, density).nnz);
                            row.put("median_s", timing.median());
                            row.put("min_s", timing.min());
                            row.put("max_s", timing.max());
                            row.put("gbps_model", gbps);
                            row.put("floor_gbps", floorGbps);
                            row.put("floor_fraction", gbps / floorGbps);
                            if (t == 1) {
                                double cpuGbps = bytes / timing.cpuMedian() / 1e9;
                                double cpuFloorGbps = phase.equals("encode") ? cpuFloor.encodeGbps(2, density) : cpuFloor.applyGbps(2, density);
                                putIfFinite(row, "cpu_gbps_model", cpuGbps);
                                putIfFinite(row, "cpu_floor_fraction", cpuGbps / cpuFloorGbps);
                            }
                        }
                    }
                }
            }
        } finally {
            KernelWorkload.release();
        }
        addJavaToNativeRatios(results);
        results.printTable(out, "kernel", "impl", "isa", "threads", "density", "nnz", "median_s", "min_s", "max_s",
            "gbps_model", "floor_gbps", "floor_fraction", "java_vs_native", "cpu_gbps_model", "cpu_floor_fraction");
        printTargets(out, results);
        if (json != null) {
            results.writeJson(json);
        }
    }

    private static void putIfFinite(Map<String, Object> row, String key, double value) {
        if (Double.isFinite(value)) {
            row.put(key, value);
        }
    }

    /** Adds {@code java_vs_native} to Java rows that have a native counterpart. */
    private static void addJavaToNativeRatios(BenchResults results) {
        for (Map<String, Object> row : results.rows()) {
            if (!"java".equals(row.get("impl")) || "floor".equals(row.get("kernel"))) {
                continue;
            }
            for (Map<String, Object> other : results.rows()) {
                if ("native".equals(other.get("impl")) && other.get("kernel").equals(row.get("kernel"))
                    && other.get("threads").equals(row.get("threads")) && other.get("density").equals(row.get("density"))) {
                    row.put("java_vs_native", (Double) row.get("gbps_model") / (Double) other.get("gbps_model"));
                    if (row.containsKey("cpu_gbps_model") && other.containsKey("cpu_gbps_model")) {
                        row.put("cpu_java_vs_native", (Double) row.get("cpu_gbps_model") / (Double) other.get("cpu_gbps_model"));
                    }
                }
            }
        }
    }

    private static void printTargets(PrintStream out, BenchResults results) {
        for (Map<String, Object> row : results.rows()) {
            if (!Double.valueOf(0.03).equals(row.get("density")) || !Integer.valueOf(1).equals(row.get("threads"))) {
                continue;
            }
            String kernel = (String) row.get("kernel");
            if ("native".equals(row.get("impl")) && kernel.equals("encode")) {
                out.printf(Locale.ROOT, "T1 encode native 1t 3%%: %.3f of floor by wall clock, %s by CPU time (target >= 0.85)%n",
                    (Double) row.get("floor_fraction"), text(row.get("cpu_floor_fraction")));
            } else if ("native".equals(row.get("impl")) && kernel.equals("apply")) {
                out.printf(Locale.ROOT, "T3 apply native 1t 3%%: %.3f of floor by wall clock, %s by CPU time (target >= 0.80)%n",
                    (Double) row.get("floor_fraction"), text(row.get("cpu_floor_fraction")));
            } else if ("java".equals(row.get("impl")) && row.containsKey("java_vs_native")) {
                out.printf(Locale.ROOT, "T7 %s java 1t 3%%: %.3f of native by wall clock, %s by CPU time (target >= 0.50)%n",
                    kernel, (Double) row.get("java_vs_native"), text(row.get("cpu_java_vs_native")));
            }
        }
    }

    private Timing measure(Class<?> benchmark, String method, Map<String, String> params, Progress bar, String label) {
        ChainedOptionsBuilder options = new OptionsBuilder()
            .include("^" + benchmark.getName().replace(".", "\\.") + "\\." + method + "$")
            .warmupIterations(warmup)
            .measurementIterations(iterations)
            .forks(fork ? 1 : 0)
            .shouldFailOnError(true)
            .verbosity(VerboseMode.SILENT);
        params.forEach(options::param);
        bar.start(label);
        CpuClock.drain();
        Collection<RunResult> runs;
        try {
            runs = new Runner(options.build()).run();
        } catch (RunnerException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new CliFailure("benchmark " + label + " failed: " + cause.getMessage());
        }
        List<Double> seconds = new ArrayList<>();
        for (RunResult run : runs) {
            for (BenchmarkResult br : run.getBenchmarkResults()) {
                for (IterationResult ir : br.getIterationResults()) {
                    seconds.add(ir.getPrimaryResult().getScore() / 1e3);
                }
            }
        }
        if (seconds.size() != iterations) {
            throw new CliFailure("benchmark " + label + " produced " + seconds.size() + " timings, expected " + iterations);
        }
        double[] s = seconds.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        List<Double> cpu = CpuClock.drain();
        double cpuMedian = Double.NaN;
        if (!fork && cpu.size() >= iterations) {
            cpuMedian = median(cpu.subList(cpu.size() - iterations, cpu.size()).stream().mapToDouble(Double::doubleValue).sorted().toArray());
        }
        Timing timing = new Timing(median(s), s[0], s[s.length - 1], cpuMedian);
        bar.done(label, timing);
        return timing;
    }

    private static String text(Object ratio) {
        return ratio instanceof Double d ? String.format(Locale.ROOT, "%.3f", d) : "n/a";
    }

    private static double median(double[] sorted) {
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    /** Progress on stderr (only when it is a terminal): step, last result and ETA. */
    private static final class Progress {
        private final PrintStream err;
        private final int total;
        private final long started = System.nanoTime();
        private int finished;

        Progress(PrintStream err, int total) {
            this.err = err;
            this.total = total;
        }

        void start(String label) {
            if (err != null) {
                err.printf(Locale.ROOT, "[%d/%d] %s ...%n", finished + 1, total, label);
            }
        }

        void done(String label, Timing timing) {
            finished++;
            if (err != null) {
                double elapsed = (System.nanoTime() - started) / 1e9;
                double eta = elapsed / finished * (total - finished);
                err.printf(Locale.ROOT, "[%d/%d] %s: median %.3f s; elapsed %.0f s, ETA %.0f s%n", finished, total, label,
                    timing.median(), elapsed, eta);
            }
        }
    }
}
