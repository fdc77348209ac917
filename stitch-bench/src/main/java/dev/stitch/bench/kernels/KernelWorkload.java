package dev.stitch.bench.kernels;

import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.memory.OffHeapBuffer;
import dev.stitch.memory.BufferAllocator;
import dev.stitch.memory.MemoryPurpose;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

/**
 * The benchmark workload of docs/performance-targets.md §7.1, scaled to any size: the 19 LLaMA-shaped bf16
 * tensors (sizes scaled in proportion), old values N(0, 0.02) rounded to bf16, changes i.i.d.
 * Bernoulli(p) of +-k ulps on the bit pattern. Generation is deterministic (seed 42) and split
 * into fixed blocks, each with its own generator, so it can run on several threads.
 *
 * <p>Holds old, new, the reference encode (positions and values per tensor) and the escaped gap
 * stream per tensor, all off-heap. One workload is cached per process because generating a GiB
 * takes seconds.
 */
final class KernelWorkload implements AutoCloseable {

    static final ValueLayout.OfShort LE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long GIB_ELEMENTS = 1L << 29;
    private static final int BLOCK = 1 << 20;
    private static final long SEED = 42;

    /** One tensor of the workload: its name, element count and first element in the flat buffer. */
    record Tensor(String name, long elements, long firstElement) {
    }

    private static KernelWorkload cached;

    final long sizeBytes;
    final double density;
    final List<Tensor> tensors;
    final BufferAllocator allocator = BufferAllocator.unpinned("bench-kernels-workload");
    final OffHeapBuffer old;
    final OffHeapBuffer neu;
    /** Per tensor, the reference changed positions (u32, local to the tensor) and new values, at the tensor's slot range. */
    final OffHeapBuffer refPositions;
    final OffHeapBuffer refValues;
    final long[] changed;
    /** Escaped u16 gap streams, one after another, tensor t at {@code unitOffset[t]} with {@code unitCount[t]} units. */
    final OffHeapBuffer units;
    final long[] unitOffset;
    final long[] unitCount;
    final long nnz;

    private KernelWorkload(long sizeBytes, double density) {
        if (sizeBytes < 64 * 19 * 2 || sizeBytes % 64 != 0) {
            throw new IllegalArgumentException("workload size must be a multiple of 64 bytes and at least " + (64 * 19 * 2) + ", got " + sizeBytes);
        }
        this.sizeBytes = sizeBytes;
        this.density = density;
        this.tensors = layout(sizeBytes / 2);
        long n = sizeBytes / 2;
        old = allocator.allocate(sizeBytes, MemoryPurpose.SNAPSHOT);
        neu = allocator.allocate(sizeBytes, MemoryPurpose.STAGING);
        generate(old.segment(), neu.segment(), n, density);
        refPositions = allocator.allocate(n * 4, MemoryPurpose.SCRATCH);
        refValues = allocator.allocate(n * 2, MemoryPurpose.SCRATCH);
        changed = new long[tensors.size()];
        unitOffset = new long[tensors.size()];
        unitCount = new long[tensors.size()];
        DeltaKernels k = Kernels.get();
        MemorySegment snapshot = old.segment();
        long total = 0;
        long units = 0;
        for (int t = 0; t < tensors.size(); t++) {
            Tensor tensor = tensors.get(t);
            MemorySegment o = slice(snapshot, tensor);
            MemorySegment nw = slice(neu.segment(), tensor);
            changed[t] = k.diffGather(o, nw, 2, 0, positionsSlot(refPositions.segment(), tensor), 4,
                valuesSlot(refValues.segment(), tensor), false, false);
            total += changed[t];
            unitCount[t] = k.escapedGapUnits(positionsSlot(refPositions.segment(), tensor), 4, changed[t]);
            unitOffset[t] = units;
            units += unitCount[t];
        }
        nnz = total;
        this.units = allocator.allocate(Math.max(2, units * 2), MemoryPurpose.STAGING);
        for (int t = 0; t < tensors.size(); t++) {
            k.encodeEscapedGaps(positionsSlot(refPositions.segment(), tensors.get(t)), 4, changed[t],
                this.units.segment().asSlice(unitOffset[t] * 2, unitCount[t] * 2));
        }
    }

    /** The workload of this size and density, reusing the cached one when it matches. */
    static synchronized KernelWorkload get(long sizeBytes, double density) {
        if (cached != null && cached.sizeBytes == sizeBytes && cached.density == density) {
            return cached;
        }
        if (cached != null) {
            cached.close();
            cached = null;
        }
        cached = new KernelWorkload(sizeBytes, density);
        return cached;
    }

    /** Frees the cached workload (end of a benchmark run). */
    static synchronized void release() {
        if (cached != null) {
            cached.close();
            cached = null;
        }
    }

    static MemorySegment slice(MemorySegment flat, Tensor t) {
        return flat.asSlice(t.firstElement() * 2, t.elements() * 2);
    }

    static MemorySegment positionsSlot(MemorySegment positions, Tensor t) {
        return positions.asSlice(t.firstElement() * 4, t.elements() * 4);
    }

    static MemorySegment valuesSlot(MemorySegment values, Tensor t) {
        return values.asSlice(t.firstElement() * 2, t.elements() * 2);
    }

    MemorySegment units(int t) {
        return units.segment().asSlice(unitOffset[t] * 2, unitCount[t] * 2);
    }

    /** The 19 tensors of 7.1, element counts scaled to {@code elements} in total, each a multiple of 32. */
    static List<Tensor> layout(long elements) {
        List<String> names = new ArrayList<>();
        List<Long> full = new ArrayList<>();
        names.add("model.embed_tokens.weight");
        full.add(32252L * 4096);
        for (int layer = 0; layer < 2; layer++) {
            String p = "model.layers." + layer + ".";
            for (String proj : new String[] {"q", "k", "v", "o"}) {
                names.add(p + "self_attn." + proj + "_proj.weight");
                full.add(4096L * 4096);
            }
            names.add(p + "mlp.gate_proj.weight");
            full.add(11008L * 4096);
            names.add(p + "mlp.up_proj.weight");
            full.add(11008L * 4096);
            names.add(p + "mlp.down_proj.weight");
            full.add(4096L * 11008);
            names.add(p + "input_layernorm.weight");
            full.add(4096L);
            names.add(p + "post_attention_layernorm.weight");
            full.add(4096L);
        }
        long[] counts = new long[names.size()];
        long sum = 0;
        for (int i = 1; i < counts.length; i++) {
            counts[i] = Math.max(32, (long) ((double) full.get(i) * elements / GIB_ELEMENTS) / 32 * 32);
            sum += counts[i];
        }
        // The embedding absorbs rounding so the total is exact.
        counts[0] = elements - sum;
        List<Tensor> out = new ArrayList<>();
        long first = 0;
        for (int i = 0; i < counts.length; i++) {
            out.add(new Tensor(names.get(i), counts[i], first));
            first += counts[i];
        }
        return List.copyOf(out);
    }

    private static void generate(MemorySegment old, MemorySegment neu, long n, double density) {
        int blocks = (int) ((n + BLOCK - 1) / BLOCK);
        int threads = Math.max(1, Math.min(Runtime.getRuntime().availableProcessors(), 8));
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int worker = t;
            parts.add(CompletableFuture.runAsync(() -> IntStream.range(0, blocks).filter(b -> b % threads == worker)
                .forEach(b -> generateBlock(old, neu, b, Math.min(BLOCK, n - (long) b * BLOCK), density))));
        }
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).join();
    }

    private static void generateBlock(MemorySegment old, MemorySegment neu, int block, long count, double density) {
        SplittableRandom values = new SplittableRandom(SEED * 0x9E3779B97F4A7C15L + block);
        long base = (long) block * BLOCK * 2;
        for (long i = 0; i < count; i++) {
            short bits = bf16(values.nextGaussian() * 0.02);
            old.set(LE16, base + 2 * i, bits);
        }
        MemorySegment.copy(old, base, neu, base, count * 2);
        if (density <= 0) {
            return;
        }
        SplittableRandom changes = new SplittableRandom((SEED + Double.doubleToLongBits(density)) * 0xBF58476D1CE4E5B9L + block);
        double logKeep = Math.log1p(-Math.min(density, 1.0));
        long i = -1;
        while (true) {
            // Geometric gap between Bernoulli(p) successes, so cost scales with changes, not elements.
            i += 1 + (density >= 1 ? 0 : (long) Math.floor(Math.log(1 - changes.nextDouble()) / logKeep));
            if (i >= count) {
                break;
            }
            int bits = old.get(LE16, base + 2 * i) & 0xFFFF;
            neu.set(LE16, base + 2 * i, (short) change(bits, changes));
        }
    }

    /** bits +- k ulps (k = 1: 90 %, 2: 8 %, 3-4: 2 %), flipping the sign of the step when it would break the value. */
    static int change(int bits, SplittableRandom rnd) {
        int r = rnd.nextInt(100);
        int k = r < 90 ? 1 : r < 98 ? 2 : 3 + rnd.nextInt(2);
        int step = rnd.nextBoolean() ? k : -k;
        int candidate = bits + step;
        if (!usable(bits, candidate)) {
            candidate = bits - step;
        }
        return candidate & 0xFFFF;
    }

    private static boolean usable(int bits, int candidate) {
        return candidate >= 0 && candidate <= 0xFFFF && ((candidate ^ bits) & 0x8000) == 0 && (candidate & 0x7F80) != 0x7F80;
    }

    /** Round-to-nearest-even of a double, through float, to bf16 bits. */
    static short bf16(double v) {
        int f = Float.floatToRawIntBits((float) v);
        int rounded = f + 0x7FFF + ((f >>> 16) & 1);
        return (short) (rounded >>> 16);
    }

    @Override
    public void close() {
        units.close();
        refValues.close();
        refPositions.close();
        neu.close();
        old.close();
        allocator.close();
    }
}
