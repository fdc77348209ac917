package dev.stitch.bench.kernels;

import dev.stitch.cli.ByteSize;

import dev.stitch.kernels.ChunkedKernels;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.memory.OffHeapBuffer;
import dev.stitch.memory.BufferAllocator;
import dev.stitch.memory.MemoryPurpose;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH benchmarks of the two hot kernels on the 7.1 workload, following 7.5: each invocation is one
 * whole pass over the model (single-shot), the snapshot and destination are reset and the cache
 * evicted outside the timed region, and every result is checked bit-exact afterwards.
 * {@code stitch bench kernels} runs these; they also run standalone:
 * {@code java -cp stitch-bench.jar org.openjdk.jmh.Main KernelBenchmarks -p size=256m}.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 7)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector", "-Xmx2g"})
public class KernelBenchmarks {

    /** Parameters and the kernels under test, shared by both states. */
    @State(Scope.Benchmark)
    public static class Config {
        @Param("1g")
        public String size;
        @Param({"0.001", "0.01", "0.03", "0.1"})
        public String density;
        @Param({"native", "java"})
        public String impl;
        @Param({"1", "2"})
        public int threads;

        KernelWorkload workload;
        ChunkedKernels chunked;
        ExecutorService pool;

        @Setup(Level.Trial)
        public void setUp() {
            DeltaKernels kernels = switch (impl) {
                case "native" -> Kernels.nativeKernels();
                case "java" -> Kernels.java();
                default -> throw new IllegalArgumentException("impl must be native or java, got " + impl);
            };
            workload = KernelWorkload.get(ByteSize.parse(size), Double.parseDouble(density));
            chunked = ChunkedKernels.withThreads(kernels, threads, ChunkedKernels.DEFAULT_CHUNK_BYTES);
            pool = threads > 1 ? Executors.newFixedThreadPool(threads) : null;
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            chunked.close();
            if (pool != null) {
                pool.shutdown();
            }
        }
    }

    /** Encode: the snapshot (reset to old before every pass) is diffed against new and updated in place. */
    @State(Scope.Benchmark)
    public static class EncodeState {
        BufferAllocator allocator;
        OffHeapBuffer snapshot;
        OffHeapBuffer positions;
        OffHeapBuffer values;
        long[] counts;

        @Setup(Level.Trial)
        public void allocate(Config c) {
            allocator = BufferAllocator.pinned("bench-encode");
            long n = c.workload.sizeBytes / 2;
            snapshot = allocator.allocate(c.workload.sizeBytes, MemoryPurpose.SNAPSHOT);
            positions = allocator.allocate(n * 4, MemoryPurpose.STAGING);
            values = allocator.allocate(n * 2, MemoryPurpose.STAGING);
            counts = new long[c.workload.tensors.size()];
        }

        @Setup(Level.Iteration)
        public void reset(Config c) {
            MemorySegment.copy(c.workload.old.segment(), 0, snapshot.segment(), 0, c.workload.sizeBytes);
        }

        @TearDown(Level.Iteration)
        public void validate(Config c) {
            KernelWorkload w = c.workload;
            if (snapshot.segment().mismatch(w.neu.segment()) != -1) {
                throw new IllegalStateException("encode left the snapshot different from new");
            }
            for (int t = 0; t < w.tensors.size(); t++) {
                KernelWorkload.Tensor tensor = w.tensors.get(t);
                if (counts[t] != w.changed[t]) {
                    throw new IllegalStateException("encode found " + counts[t] + " changes in " + tensor.name() + ", expected " + w.changed[t]);
                }
                long pBytes = counts[t] * 4;
                long vBytes = counts[t] * 2;
                if (KernelWorkload.positionsSlot(positions.segment(), tensor).asSlice(0, pBytes)
                        .mismatch(KernelWorkload.positionsSlot(w.refPositions.segment(), tensor).asSlice(0, pBytes)) != -1
                    || KernelWorkload.valuesSlot(values.segment(), tensor).asSlice(0, vBytes)
                        .mismatch(KernelWorkload.valuesSlot(w.refValues.segment(), tensor).asSlice(0, vBytes)) != -1) {
                    throw new IllegalStateException("encode output of " + tensor.name() + " differs from the reference");
                }
            }
        }

        @TearDown(Level.Trial)
        public void free() {
            values.close();
            positions.close();
            snapshot.close();
            allocator.close();
        }
    }

    /** Apply: the destination (reset to old, then evicted from cache) receives the escaped-gap stream and values. */
    @State(Scope.Benchmark)
    public static class ApplyState {
        BufferAllocator allocator;
        OffHeapBuffer destination;
        OffHeapBuffer evict;
        List<Integer> order;

        @Setup(Level.Trial)
        public void allocate(Config c) {
            allocator = BufferAllocator.pinned("bench-apply");
            destination = allocator.allocate(c.workload.sizeBytes, MemoryPurpose.STAGING);
            evict = allocator.allocate(evictionBytes(), MemoryPurpose.SCRATCH);
            evict.segment().fill((byte) 1);
            order = new ArrayList<>();
            for (int t = 0; t < c.workload.tensors.size(); t++) {
                order.add(t);
            }
            // Largest first, so two threads finish close together.
            order.sort(Comparator.comparingLong((Integer t) -> c.workload.tensors.get(t).elements()).reversed());
        }

        @Setup(Level.Iteration)
        public void reset(Config c) {
            MemorySegment.copy(c.workload.old.segment(), 0, destination.segment(), 0, c.workload.sizeBytes);
            Kernels.get().streamRead(evict.segment());
        }

        @TearDown(Level.Iteration)
        public void validate(Config c) {
            if (destination.segment().mismatch(c.workload.neu.segment()) != -1) {
                throw new IllegalStateException("apply result differs from new");
            }
        }

        @TearDown(Level.Trial)
        public void free() {
            evict.close();
            destination.close();
            allocator.close();
        }
    }

    /** Twice the last-level cache (read from sysfs), at least 64 MiB. */
    static long evictionBytes() {
        long llc = 32L << 20;
        try {
            Path p = Path.of("/sys/devices/system/cpu/cpu0/cache/index3/size");
            if (Files.exists(p)) {
                llc = ByteSize.parse(Files.readString(p).trim().toLowerCase(java.util.Locale.ROOT));
            }
        } catch (java.io.IOException | IllegalArgumentException e) {
            llc = 32L << 20;
        }
        return Math.max(64L << 20, 2 * llc);
    }

    @Benchmark
    public long encode(Config c, EncodeState s) {
        long cpu = CpuClock.start();
        KernelWorkload w = c.workload;
        long total = 0;
        for (int t = 0; t < w.tensors.size(); t++) {
            KernelWorkload.Tensor tensor = w.tensors.get(t);
            s.counts[t] = c.chunked.diffGather(KernelWorkload.slice(s.snapshot.segment(), tensor), KernelWorkload.slice(w.neu.segment(), tensor),
                2, 0, KernelWorkload.positionsSlot(s.positions.segment(), tensor), 4, KernelWorkload.valuesSlot(s.values.segment(), tensor),
                false, true);
            total += s.counts[t];
        }
        CpuClock.stop(cpu);
        return total;
    }

    @Benchmark
    public long apply(Config c, ApplyState s) {
        long cpu = CpuClock.start();
        KernelWorkload w = c.workload;
        DeltaKernels k = c.chunked.kernels();
        if (c.pool == null) {
            long total = 0;
            for (int t : s.order) {
                total += applyTensor(k, w, s, t);
            }
            CpuClock.stop(cpu);
            return total;
        }
        List<CompletableFuture<Long>> parts = new ArrayList<>();
        for (int t : s.order) {
            parts.add(CompletableFuture.supplyAsync(() -> applyTensor(k, w, s, t), c.pool));
        }
        long total = 0;
        for (CompletableFuture<Long> p : parts) {
            total += p.join();
        }
        CpuClock.stop(cpu);
        return total;
    }

    private static long applyTensor(DeltaKernels k, KernelWorkload w, ApplyState s, int t) {
        KernelWorkload.Tensor tensor = w.tensors.get(t);
        return k.scatterEscapedGaps(KernelWorkload.slice(s.destination.segment(), tensor), 2, w.units(t), w.unitCount[t],
            KernelWorkload.valuesSlot(w.refValues.segment(), tensor), w.changed[t], false);
    }
}
