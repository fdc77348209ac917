package dev.stitch.bench.simulate;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.VersionStep;
import dev.stitch.encode.DeltaEncoder;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.Snapshot;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatOptions;
import dev.stitch.format.VersionWriter;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.protocol.Artifact;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The simulation's codecs over the project's real code: the delta encoder and the format writers on
 * the trainer side, the host applier on the rollout side. Every received file is checked against the
 * size and xxh3-128 digest the writer recorded (the manifest check of docs/protocol/board.md §1.3)
 * before it is used.
 */
final class ChunkCodecs {
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    private ChunkCodecs() {
    }

    static ChunkCodec open(CodecSpec spec, SimulatedVersion version, Path checkpoint) throws IOException {
        DeltaFormat format = spec.format();
        if (!format.hasTransition()) {
            return new FullCodec(version, checkpoint);
        }
        // sparse_delta reads new values; disk_delta and stitch_delta diff in their own value mode
        ValueMode mode = format == DeltaFormat.SPARSE_DELTA ? ValueMode.OVERWRITE : ValueMode.parse(spec.encoding());
        return new DeltaCodec(spec, version, checkpoint, mode);
    }

    /** Directory of chunk {@code chunk}'s files inside a board copy: each chunk is its own small version. */
    static String chunkDir(int chunk) {
        return String.format(Locale.ROOT, "chunk-%04d", chunk);
    }

    /** File records the trainer side wrote, keyed by path relative to the board copy. */
    private abstract static class Recorded implements ChunkCodec {
        final SimulatedVersion version;
        final DeltaKernels kernels = Kernels.get();
        private final Map<String, WrittenFile> written = new ConcurrentHashMap<>();
        /**
         * One worker per stage: code that uses parallel streams runs them on the pool it was called
         * from, so each stage uses exactly one core and the per-core costs are honest.
         */
        private final ForkJoinPool encodePool = new ForkJoinPool(1);
        private final ForkJoinPool applyPool = new ForkJoinPool(1);

        Recorded(SimulatedVersion version) {
            this.version = version;
        }

        @Override
        public int chunks() {
            return version.chunkCount();
        }

        private final AtomicLong encodeCpu = new AtomicLong();
        private final AtomicLong applyCpu = new AtomicLong();

        /** Runs {@code work} on the stage's single worker and adds the CPU time that worker spent to {@code cpu}. */
        static <T> T onOneCore(ForkJoinPool pool, AtomicLong cpu, Callable<T> work) throws Exception {
            try {
                return pool.submit(() -> {
                    long t0 = CPU.getCurrentThreadCpuTime();
                    try {
                        return work.call();
                    } finally {
                        cpu.addAndGet(CPU.getCurrentThreadCpuTime() - t0);
                    }
                }).get();
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception x ? x : e;
            }
        }

        <T> T encodeStage(Callable<T> work) throws Exception {
            return onOneCore(encodePool, encodeCpu, work);
        }

        <T> T applyStage(Callable<T> work) throws Exception {
            return onOneCore(applyPool, applyCpu, work);
        }

        @Override
        public long encodeCpuNanos() {
            return encodeCpu.get();
        }

        @Override
        public long applyCpuNanos() {
            return applyCpu.get();
        }

        void shutdownStages() {
            encodePool.shutdownNow();
            applyPool.shutdownNow();
        }

        List<String> record(String prefix, List<WrittenFile> files) {
            List<String> paths = new ArrayList<>(files.size());
            for (WrittenFile f : files) {
                String p = prefix + "/" + f.path();
                written.put(p, f);
                paths.add(p);
            }
            return paths;
        }

        /** Refuses a received file whose size or digest differs from what the trainer wrote. */
        void verifyReceived(Path root, String relative) throws IOException {
            WrittenFile expected = written.get(relative);
            if (expected == null) {
                throw new IOException(relative + ": not a file the trainer wrote");
            }
            Path file = root.resolve(relative);
            long size = Files.size(file);
            if (size != expected.size()) {
                throw new IOException(relative + ": " + size + " bytes received, " + expected.size() + " written");
            }
            Hash128 got;
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ); Arena a = Arena.ofConfined()) {
                got = kernels.xxh3(size == 0 ? MemorySegment.ofArray(new byte[0]) : ch.map(FileChannel.MapMode.READ_ONLY, 0, size, a));
            }
            if (!got.equals(expected.xxh3())) {
                throw new IOException(relative + ": xxh3-128 " + got.hex() + " received, " + expected.xxh3().hex() + " written");
            }
        }
    }

    /**
     * sparse_delta and disk_delta: chunk i is version i+1 of its own small chain, diffed against the
     * chunk's snapshot by the delta encoder, written by the format writer, and applied to the local
     * checkpoint by the host applier (which verifies files and tensor digests before writing).
     */
    private static final class DeltaCodec extends Recorded {
        private final CodecSpec spec;
        private final ValueMode mode;
        private final DeltaEncoder encoder;
        private final Snapshot[] snapshots;
        private final Map<Integer, WriteResult> results = new ConcurrentHashMap<>();
        private final HostApplier applier;

        DeltaCodec(CodecSpec spec, SimulatedVersion version, Path checkpoint, ValueMode mode) throws IOException {
            super(version);
            this.spec = spec;
            this.mode = mode;
            // The publisher keeps its snapshot between steps, so building it is not part of a step's encode time.
            this.snapshots = new Snapshot[version.chunkCount()];
            for (int i = 0; i < snapshots.length; i++) {
                snapshots[i] = Snapshot.copyOf(version.oldChunk(i));
            }
            this.encoder = new DeltaEncoder(kernels, 1);
            this.applier = HostApplier.open(checkpoint);
        }

        @Override
        public String backend() {
            return spec.backend();
        }

        @Override
        public String encoding() {
            return spec.encoding();
        }

        @Override
        public List<String> encode(int chunk, Path trainerDir) throws Exception {
            return encodeStage(() -> encodeChunk(chunk, trainerDir));
        }

        private List<String> encodeChunk(int chunk, Path trainerDir) throws IOException {
            try (Arena scratch = Arena.ofShared()) {
                List<TensorData> next = version.newChunk(chunk);
                EncodedVersion diff = encoder.diff(snapshots[chunk], next, mode, scratch);
                Path dir = trainerDir.resolve(chunkDir(chunk));
                DeltaFormat format = spec.format();
                WriteResult w;
                try (VersionWriter writer = format.newWriter(format.withCodec(FormatOptions.defaults(), spec.encoding()), null)) {
                    w = writer.write(chunk + 1, diff.changes(), dir);
                }
                encoder.advance(snapshots[chunk], diff, next);
                results.put(chunk, w);
                return record(chunkDir(chunk), w.files());
            }
        }

        @Override
        public void apply(int chunk, Path rolloutDir, List<String> files) throws Exception {
            WriteResult w = results.get(chunk);
            Map<String, Artifact> artifacts = new HashMap<>();
            for (WrittenFile f : w.files()) {
                artifacts.put(f.path(), f.toArtifact());
            }
            VersionStep step = new VersionStep(chunk + 1, chunk, null, spec.backend(), null,
                    rolloutDir.resolve(chunkDir(chunk)), w.transitionFiles(), List.of(), artifacts, false);
            applyStage(() -> applier.apply(List.of(step), ApplyProgress.NONE));
        }

        @Override
        public void close() {
            shutdownStages();
            try {
                applier.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                encoder.close();
                for (Snapshot s : snapshots) {
                    s.close();
                }
            }
        }
    }

    /**
     * full: the full-checkpoint writer writes every chunk as a complete checkpoint (one shard); the
     * rollout host verifies it and loads it by replacing the matching local shard.
     */
    private static final class FullCodec extends Recorded {
        private final Path checkpoint;
        private final FullCheckpointWriter writer = FullCheckpointWriter.defaults();

        FullCodec(SimulatedVersion version, Path checkpoint) {
            super(version);
            this.checkpoint = checkpoint;
        }

        @Override
        public String backend() {
            return DeltaFormat.FULL.id();
        }

        @Override
        public String encoding() {
            return "full";
        }

        @Override
        public List<String> encode(int chunk, Path trainerDir) throws Exception {
            WriteResult w = encodeStage(() -> writer.write(version.newChunk(chunk), trainerDir.resolve(chunkDir(chunk)), FullCheckpointWriter.ANCHOR_DIR));
            return record(chunkDir(chunk), w.files());
        }

        @Override
        public void apply(int chunk, Path rolloutDir, List<String> files) throws Exception {
            applyStage(() -> {
                load(chunk, rolloutDir, files);
                return null;
            });
        }

        private void load(int chunk, Path rolloutDir, List<String> files) throws IOException {
            for (String f : files) {
                verifyReceived(rolloutDir, f);
            }
            // The chunk's tensors are exactly the local shard's, so loading the anchor chunk replaces that shard.
            for (String f : files) {
                Path src = rolloutDir.resolve(f);
                if (src.getFileName().toString().endsWith(".safetensors")) {
                    Files.move(src, checkpoint.resolve(version.shardName(chunk)), StandardCopyOption.REPLACE_EXISTING,
                            StandardCopyOption.ATOMIC_MOVE);
                }
            }
        }

        @Override
        public void close() {
            shutdownStages();
        }
    }
}
