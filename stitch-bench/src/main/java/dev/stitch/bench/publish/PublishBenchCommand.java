package dev.stitch.bench.publish;

import dev.stitch.bench.ScratchDirectories;
import dev.stitch.cli.ByteSize;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.HostStateFile;
import dev.stitch.apply.VersionStep;
import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.cli.CliFailure;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.bench.kernels.TrafficFloor;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.format.stitchdelta.StitchDeltaFile;
import dev.stitch.format.stitchdelta.StitchRecord;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench publish}: publish latency and host-apply latency of the docs/performance-targets.md §7.1
 * workload through every backend and encoding, with the bytes each version puts on the board
 * (docs/protocol/cli-and-config.md §10.3). Versions alternate between the new and the base weights, so every
 * version of a configuration has the same density and the apply chain needs no fresh copy.
 */
@Command(name = "publish",
        mixinStandardHelpOptions = true,
        description = {
            "Publish and host-apply latency of a synthetic LLaMA-named bf16 model (docs/performance-targets.md §7.1) for "
                + "sparse_delta indices/deltas/deltas_zstd, disk_delta xor/overwrite, stitch_delta xor/overwrite "
                + "and full, at each density, with the bytes written.",
            "publish_s = diff + encode/compress + write + fsync + manifest + pointer; apply_s = host apply of "
                + "one version (files in page cache): verify, decode, scatter, digest check.",
            "Targets: right after each timed stitch_delta xor publish the bare fused encode kernel runs on the "
                + "same version, with a write + fsync of as many bytes; the median of publish_s / (kernel + write) "
                + "should be <= 1.5 at 3%%. stitch_delta bytes over deltas_zstd bytes should be <= 0.55 (xor) "
                + "and <= 0.85 (overwrite)."
        })
public final class PublishBenchCommand implements BenchSubcommand, Runnable {

    /** slime HEAD xor apply, numpy, 1 worker, GB/s of model, on the reference machine (docs/performance-targets.md §7.3). */
    static final double SLIME_APPLY_GBPS = 1.003;
    /** B_r of the reference machine, GB/s. */
    static final double REFERENCE_READ_GBPS = 17.6;
    /** Untimed versions before the timed ones (one new, one base), so JIT and first-touch memory are out of the figures. */
    static final int WARMUP_VERSIONS = 2;
    /** Keeps the streaming read's result observable, so the read cannot be optimised away. */
    static volatile long floorSink;

    @Option(names = "--size", defaultValue = "1g", paramLabel = "SIZE", converter = ByteSize.class,
            description = "Model size (k/m/g suffixes); shapes scale down from 1 GiB (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "--density", defaultValue = "0.01,0.03", split = ",", paramLabel = "D",
            description = "Fractions of elements changed per version, comma-separated (default: ${DEFAULT-VALUE}).")
    List<Double> densities;

    @Option(names = "--reps", defaultValue = "8", paramLabel = "N",
            description = "Timed versions published and applied per configuration, alternating new/base, after "
                    + WARMUP_VERSIONS + " untimed warm-up versions; rounded up to an even number; medians are reported "
                    + "(docs/performance-targets.md §7.5 asks for at least 7) (default: ${DEFAULT-VALUE}).")
    int reps;

    @Option(names = "--threads", defaultValue = "1", paramLabel = "N",
            description = "Publisher threads for the diff (targets are for 1 thread) (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--backends", split = ",", paramLabel = "B",
            description = "Only these backends (stitch_delta, sparse_delta, disk_delta, full); default: all.")
    List<String> onlyBackends;

    @Option(names = "--dir", paramLabel = "DIR",
            description = "Working directory for boards and checkpoints (default: a temporary directory, removed afterwards).")
    Path dir;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write the rows as JSON to FILE.")
    Path json;

    public PublishBenchCommand() {
    }

    /** One backend/encoding to measure. */
    private record Config(DeltaFormat backend, String encoding, Consumer<WeightPublisher.Builder> setup) {
        String label() {
            return backend.id() + "/" + encoding;
        }
    }

    private static List<Config> configs() {
        return List.of(
                new Config(DeltaFormat.SPARSE_DELTA, "indices", b -> b.sparseEncoding(SparseEncoding.INDICES)),
                new Config(DeltaFormat.SPARSE_DELTA, "deltas", b -> b.sparseEncoding(SparseEncoding.DELTAS)),
                new Config(DeltaFormat.SPARSE_DELTA, "deltas_zstd", b -> b.sparseEncoding(SparseEncoding.DELTAS_ZSTD)),
                new Config(DeltaFormat.DISK_DELTA, "xor", b -> b.diskEncoding(ValueMode.XOR)),
                new Config(DeltaFormat.DISK_DELTA, "overwrite", b -> b.diskEncoding(ValueMode.OVERWRITE)),
                new Config(DeltaFormat.STITCH_DELTA, "xor", b -> b.values(ValueMode.XOR)),
                new Config(DeltaFormat.STITCH_DELTA, "overwrite", b -> b.values(ValueMode.OVERWRITE)),
                new Config(DeltaFormat.FULL, "full", b -> { }));
    }

    @Override
    public void run() {
        if (reps < 1 || threads < 1) {
            throw new CliFailure("--reps and --threads must be >= 1");
        }
        for (double d : densities) {
            if (!(d >= 0 && d <= 1)) {
                throw new CliFailure("densities are fractions in [0, 1], got " + d);
            }
        }
        List<Config> configs = new ArrayList<>();
        for (Config c : configs()) {
            if (onlyBackends == null || onlyBackends.stream().anyMatch(b -> DeltaFormat.parse(b) == c.backend())) {
                configs.add(c);
            }
        }
        if (configs.isEmpty()) {
            throw new CliFailure("--backends selects nothing");
        }
        int versions = reps + (reps % 2);
        PrintStream progress = System.console() != null ? System.err : null;
        BenchResults results = new BenchResults("publish");
        Path work = null;
        boolean temporary = dir == null;
        try {
            work = temporary ? Files.createTempDirectory("stitch-bench-publish") : Files.createDirectories(dir);
            try (PublishWorkload workload = PublishWorkload.generate(size)) {
                Path baseDir = work.resolve("base");
                FullCheckpointWriter.defaults().write(workload.base(), baseDir, "");
                Path local = work.resolve("local");
                copyWeights(baseDir, local);
                for (double density : densities) {
                    List<TensorData> next = workload.step(density, PublishWorkload.SEED + 1);
                    Map<String, Map<String, Object>> byLabel = new LinkedHashMap<>();
                    for (Config c : configs) {
                        if (progress != null) {
                            progress.printf(Locale.ROOT, "bench publish: %s at density %s ...%n", c.label(), density);
                        }
                        Map<String, Object> row = results.row();
                        measure(c, density, workload, next, work, local, versions, row);
                        byLabel.put(c.label(), row);
                    }
                    addTargets(byLabel, workload);
                }
            }
        } catch (IOException e) {
            throw new CliFailure("bench publish failed: " + e.getMessage());
        } finally {
            if (temporary && work != null) {
                ScratchDirectories.deleteQuietly(work, "bench publish");
            }
        }
        results.printTable(System.out, "backend", "encoding", "density", "size_bytes", "bytes_written", "encode_s",
                "publish_s", "apply_s", "apply_gbps_model");
        printTargets(results);
        if (json != null) {
            results.writeJson(json);
        }
    }

    private void measure(Config c, double density, PublishWorkload workload, List<TensorData> next, Path work, Path local,
                         int versions, Map<String, Object> row) throws IOException {
        Path boardDir = work.resolve("board-" + c.backend().id() + "-" + c.encoding() + "-" + density);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(boardDir);
        double[] encode = new double[versions];
        double[] publish = new double[versions];
        double[] diff = new double[versions];
        double[] commit = new double[versions];
        double[] advance = new double[versions];
        long bytesWritten = 0;
        long changed = 0;
        WeightPublisher.Builder builder = WeightPublisher.builder().board(board).backends(c.backend())
                .anchorInterval(0).threads(threads).pinSnapshot(false).seed(Weights.of(workload.base()));
        c.setup().accept(builder);
        int total = WARMUP_VERSIONS + versions;
        // T8's baseline runs right after each timed publish, so both see the same machine (it drifts)
        boolean t8 = c.backend() == DeltaFormat.STITCH_DELTA && "xor".equals(c.encoding());
        double[] kernel = new double[versions];
        double[] write = new double[versions];
        try (WeightPublisher publisher = builder.build();
             KernelProbe probe = t8 ? new KernelProbe(workload.base()) : null) {
            for (int v = 1; v <= total; v++) {
                List<TensorData> from = v % 2 == 1 ? workload.base() : next;
                List<TensorData> to = v % 2 == 1 ? next : workload.base();
                PublishResult r = publisher.publish(v, Weights.of(to));
                if (v <= WARMUP_VERSIONS) {
                    if (probe != null) {
                        probe.seconds(from, to);
                    }
                    continue;
                }
                int i = v - WARMUP_VERSIONS - 1;
                if (probe != null) {
                    kernel[i] = probe.seconds(from, to);
                    write[i] = writeSeconds(work.resolve("write-probe"), r.bytesWritten());
                }
                encode[i] = (r.timings().diffNanos() + r.timings().encodeNanos() + r.timings().anchorNanos()) / 1e9;
                publish[i] = r.timings().publishSeconds();
                diff[i] = r.timings().diffNanos() / 1e9;
                commit[i] = r.timings().commitNanos() / 1e9;
                advance[i] = r.timings().snapshotNanos() / 1e9;
                if (i == 0) {
                    bytesWritten = r.bytesWritten();
                    changed = r.changedElements();
                }
            }
        }
        double[] apply = new double[versions];
        try (HostApplier applier = HostApplier.open(local, threads)) {
            for (int v = 1; v <= total; v++) {
                VersionStep step = VersionStep.of(board.readManifest(v), board.versionDirectory(v));
                long t0 = System.nanoTime();
                applier.apply(List.of(step), ApplyProgress.NONE);
                if (v > WARMUP_VERSIONS) {
                    apply[v - WARMUP_VERSIONS - 1] = (System.nanoTime() - t0) / 1e9;
                }
                verify(local, v % 2 == 1 ? next : workload.base(), c.label() + " version " + v);
            }
        } catch (dev.stitch.apply.RefusedVersionException e) {
            throw new IOException(c.label() + ": host apply refused version " + e.getMessage(), e);
        }
        if (c.backend() == DeltaFormat.STITCH_DELTA) {
            row.put("decode_s", decodeSeconds(board, WARMUP_VERSIONS + 1));
        }
        // An even number of versions brought the local copy back to the base: forget the chain's state.
        HostStateFile.of(local).delete();
        ScratchDirectories.deleteQuietly(boardDir, "bench publish");

        long modelBytes = workload.sizeBytes();
        double applyS = median(apply);
        row.put("backend", c.backend().id());
        row.put("encoding", c.encoding());
        row.put("density", density);
        row.put("size_bytes", modelBytes);
        row.put("bytes_written", bytesWritten);
        row.put("encode_s", median(encode));
        row.put("publish_s", median(publish));
        if (t8) {
            double[] ratio = new double[versions];
            for (int i = 0; i < versions; i++) {
                ratio[i] = publish[i] / (kernel[i] + write[i]);
            }
            row.put("kernel_s", median(kernel));
            row.put("write_s", median(write));
            row.put("publish_vs_kernel_write", median(ratio));
        }
        row.put("apply_s", applyS);
        row.put("apply_gbps_model", modelBytes / applyS / 1e9);
        row.put("encode_gbps_model", modelBytes / median(encode) / 1e9);
        row.put("diff_s", median(diff));
        row.put("manifest_pointer_s", median(commit));
        row.put("snapshot_advance_s", median(advance));
        row.put("publish_s_min", Arrays.stream(publish).min().orElse(0));
        row.put("publish_s_max", Arrays.stream(publish).max().orElse(0));
        row.put("apply_s_min", Arrays.stream(apply).min().orElse(0));
        row.put("apply_s_max", Arrays.stream(apply).max().orElse(0));
        row.put("changed_elements", changed);
        row.put("versions", versions);
        row.put("threads", threads);
    }

    /**
     * T5 on one thread (docs/performance-targets.md §7.4: zstd of all streams + gap reconstruction): every record
     * of the version's files decoded into reused buffers and its positions rebuilt from the gap
     * stream (the applier rebuilds them inside its scatter kernel; doing it here keeps the figure an
     * upper bound). Files are read once before timing, like T3 excludes I/O. Median of 5 after a warm-up.
     */
    private static double decodeSeconds(FilesystemBulletinBoard board, long v) throws IOException {
        Manifest m = board.readManifest(v);
        Path dir = board.versionDirectory(v);
        List<StitchDeltaFile> files = new ArrayList<>();
        long maxValues = 1;
        long maxUnits = 1;
        long maxCount = 1;
        for (String f : m.transitionFiles()) {
            StitchDeltaFile file = StitchDeltaFile.read(dir.resolve(f));
            files.add(file);
            for (StitchRecord r : file.records()) {
                maxValues = Math.max(maxValues, r.dense() ? r.spec().byteLength() : r.count() * r.spec().dtype().width());
                maxUnits = Math.max(maxUnits, r.units());
                maxCount = Math.max(maxCount, r.count());
            }
        }
        DeltaKernels k = Kernels.get();
        double[] times = new double[5];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment gaps = arena.allocate(2 * maxUnits, 64);
            MemorySegment values = arena.allocate(maxValues, 64);
            MemorySegment positions = arena.allocate(4 * maxCount, 64);
            for (int rep = -1; rep < times.length; rep++) {
                long t0 = System.nanoTime();
                long rebuilt = 0;
                long expected = 0;
                for (StitchDeltaFile file : files) {
                    for (StitchRecord r : file.records()) {
                        file.decodeInto(r, gaps, values);
                        if (!r.dense()) {
                            rebuilt += k.decodeEscapedGaps(gaps, r.units(), positions, 4, r.count(), r.spec().numel());
                            expected += r.count();
                        }
                    }
                }
                if (rep >= 0) {
                    times[rep] = (System.nanoTime() - t0) / 1e9;
                }
                if (rebuilt != expected) {
                    throw new IllegalStateException("decode rebuilt " + rebuilt + " positions, the records declare " + expected);
                }
            }
        }
        return median(times);
    }

    /** Streaming read and fill bandwidth (docs/performance-targets.md §7.2) measured now with the selected kernels: best of 3 passes. */
    private static TrafficFloor measureFloor() {
        DeltaKernels k = Kernels.get();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment read = arena.allocate(2L << 30, 4096);
            MemorySegment fill = arena.allocate(1L << 30, 4096);
            k.streamFill(read, (byte) 1);
            k.streamFill(fill, (byte) 1);
            double bestRead = Double.MAX_VALUE;
            double bestFill = Double.MAX_VALUE;
            long sink = 0;
            for (int rep = 0; rep < 3; rep++) {
                long t0 = System.nanoTime();
                sink += k.streamRead(read);
                long t1 = System.nanoTime();
                k.streamFill(fill, (byte) rep);
                long t2 = System.nanoTime();
                bestRead = Math.min(bestRead, (t1 - t0) / 1e9);
                bestFill = Math.min(bestFill, (t2 - t1) / 1e9);
            }
            floorSink = sink;
            return new TrafficFloor(read.byteSize() / bestRead / 1e9, fill.byteSize() / bestFill / 1e9);
        }
    }

    /** Ratios of the targets, added to the stitch_delta rows of one density. */
    private void addTargets(Map<String, Map<String, Object>> rows, PublishWorkload workload) {
        TrafficFloor floor = measureFloor();
        double density = rows.values().stream().findFirst().map(r -> ((Number) r.get("density")).doubleValue()).orElse(0.0);
        double modelBytes = workload.sizeBytes();
        double applyFloorS = modelBytes / 1e9 / floor.applyGbps(2, density);
        // slime's numpy applier (xor, 1 worker) ran at 1.003 GB/s with B_r = 17.6 GB/s (docs/performance-targets.md §7.3), scaled per 7.4
        double slimeApply = SLIME_APPLY_GBPS * floor.readGbps() / REFERENCE_READ_GBPS;
        for (Map<String, Object> row : rows.values()) {
            row.put("br_gbps", floor.readGbps());
            row.put("bw_gbps", floor.writeGbps());
            row.put("slime_apply_ref_gbps", slimeApply);
            row.put("apply_vs_slime_ref", ((Number) row.get("apply_gbps_model")).doubleValue() / slimeApply);
            if (row.containsKey("decode_s")) {
                row.put("apply_floor_s", applyFloorS);
                row.put("decode_vs_apply_floor", ((Number) row.get("decode_s")).doubleValue() / applyFloorS);
            }
        }
        Map<String, Object> zstd = rows.get("sparse_delta/deltas_zstd");
        for (String mode : List.of("xor", "overwrite")) {
            Map<String, Object> row = rows.get("stitch_delta/" + mode);
            if (row != null && zstd != null) {
                row.put("bytes_vs_deltas_zstd", ((Number) row.get("bytes_written")).doubleValue()
                        / ((Number) zstd.get("bytes_written")).doubleValue());
            }
        }
    }

    /**
     * T1's bare fused encode kernel on one thread (compare, gather positions and values, update a
     * snapshot copy), timed once per call on the same version the publisher just published; the
     * snapshot copy is refreshed outside the timed region and checked against the new weights after.
     */
    private static final class KernelProbe implements AutoCloseable {
        private final DeltaKernels k = Kernels.get();
        private final Arena arena = Arena.ofConfined();
        private final MemorySegment snapshot;
        private final MemorySegment positions;
        private final MemorySegment values;

        KernelProbe(List<TensorData> layout) {
            long maxNumel = 0;
            long maxBytes = 0;
            long total = 0;
            for (TensorData t : layout) {
                maxNumel = Math.max(maxNumel, t.spec().numel());
                maxBytes = Math.max(maxBytes, t.spec().byteLength());
                total += t.spec().byteLength();
            }
            snapshot = arena.allocate(Math.max(1, total), 64);
            positions = arena.allocate(Math.max(1, maxNumel * 4), 64);
            values = arena.allocate(Math.max(1, maxBytes), 64);
        }

        double seconds(List<TensorData> from, List<TensorData> to) {
            long off = 0;
            for (TensorData t : from) {
                MemorySegment.copy(t.bytes(), 0, snapshot, off, t.spec().byteLength());
                off += t.spec().byteLength();
            }
            long t0 = System.nanoTime();
            off = 0;
            for (TensorData n : to) {
                long len = n.spec().byteLength();
                k.diffGather(snapshot.asSlice(off, len), n.bytes(), n.spec().dtype().width(), 0, positions, 4, values, true, true);
                off += len;
            }
            double s = (System.nanoTime() - t0) / 1e9;
            off = 0;
            for (TensorData n : to) {
                if (snapshot.asSlice(off, n.spec().byteLength()).mismatch(n.bytes()) >= 0) {
                    throw new IllegalStateException("the encode kernel did not bring the snapshot to the new weights");
                }
                off += n.spec().byteLength();
            }
            return s;
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    /** Writing {@code bytes} to a new file and fsyncing it, once. */
    private static double writeSeconds(Path file, long bytes) throws IOException {
        byte[] chunk = new byte[1 << 20];
        new java.util.SplittableRandom(7).nextBytes(chunk);
        Files.deleteIfExists(file);
        long t0 = System.nanoTime();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long left = bytes;
            while (left > 0) {
                ByteBuffer b = ByteBuffer.wrap(chunk, 0, (int) Math.min(chunk.length, left));
                while (b.hasRemaining()) {
                    left -= ch.write(b);
                }
            }
            ch.force(true);
        }
        double s = (System.nanoTime() - t0) / 1e9;
        Files.deleteIfExists(file);
        return s;
    }

    private static void printTargets(BenchResults results) {
        for (Map<String, Object> r : results.rows()) {
            if (!DeltaFormat.STITCH_DELTA.id().equals(r.get("backend"))) {
                continue;
            }
            String mode = (String) r.get("encoding");
            double d = ((Number) r.get("density")).doubleValue();
            if (r.containsKey("bytes_vs_deltas_zstd")) {
                System.out.printf(Locale.ROOT, "density %s: stitch_delta %s bytes / deltas_zstd bytes = %.3f (target <= %s)%n",
                        d, mode, ((Number) r.get("bytes_vs_deltas_zstd")).doubleValue(), mode.equals("xor") ? "0.55" : "0.85");
            }
            if (r.containsKey("publish_vs_kernel_write")) {
                System.out.printf(Locale.ROOT, "density %s: stitch_delta xor publish_s %.3f, kernel %.3f s + write %.3f s: median"
                        + " ratio of each publish to the kernel run right after it = %.2f (target <= 1.5 at 0.03)%n", d, ((Number) r.get("publish_s")).doubleValue(),
                        ((Number) r.get("kernel_s")).doubleValue(), ((Number) r.get("write_s")).doubleValue(),
                        ((Number) r.get("publish_vs_kernel_write")).doubleValue());
            }
            if (r.containsKey("decode_vs_apply_floor")) {
                System.out.printf(Locale.ROOT, "density %s: stitch_delta %s decode %.4f s = %.2f x apply floor time %.4f s (T5 target <= 0.5)%n",
                        d, mode, ((Number) r.get("decode_s")).doubleValue(), ((Number) r.get("decode_vs_apply_floor")).doubleValue(),
                        ((Number) r.get("apply_floor_s")).doubleValue());
            }
            System.out.printf(Locale.ROOT, "density %s: stitch_delta %s host apply %.2f GB/s of model = %.2f x slime's numpy applier"
                    + " (%.2f GB/s, scaled by B_r %.1f / 17.6) (T6 target >= 3, and >= 3.0 GB/s absolute)%n",
                    d, mode, ((Number) r.get("apply_gbps_model")).doubleValue(), ((Number) r.get("apply_vs_slime_ref")).doubleValue(),
                    ((Number) r.get("slime_apply_ref_gbps")).doubleValue(), ((Number) r.get("br_gbps")).doubleValue());
        }
        for (Map<String, Object> r : results.rows()) {
            if (DeltaFormat.DISK_DELTA.id().equals(r.get("backend"))) {
                System.out.printf(Locale.ROOT, "density %s: disk_delta %s host apply %.2f GB/s of model = %.2f x slime's numpy applier"
                        + " (T6 target >= 1)%n", ((Number) r.get("density")).doubleValue(), r.get("encoding"),
                        ((Number) r.get("apply_gbps_model")).doubleValue(), ((Number) r.get("apply_vs_slime_ref")).doubleValue());
            }
        }
    }

    /** The local checkpoint must hold exactly {@code expected}; a benchmark that stops validating is invalid. */
    private static void verify(Path local, List<TensorData> expected, String what) throws IOException {
        try (Checkpoint cp = Checkpoint.open(local)) {
            for (TensorData t : expected) {
                if (cp.tensor(t.name()).mismatch(t.bytes()) >= 0) {
                    throw new IOException(what + ": host apply produced wrong bytes in " + t.name());
                }
            }
        }
    }

    private static void copyWeights(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> s = Files.list(from)) {
            for (Path p : s.filter(Files::isRegularFile).toList()) {
                Files.copy(p, to.resolve(p.getFileName().toString()));
            }
        }
    }

    private static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

}
