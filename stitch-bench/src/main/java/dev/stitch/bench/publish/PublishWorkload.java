package dev.stitch.bench.publish;

import dev.stitch.encode.TensorData;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The benchmark workload of docs/performance-targets.md §7.1: 19 bf16 tensors with HF LLaMA names (1 GiB at full
 * size; both dimensions scaled by the square root of the size ratio for smaller sizes), old values
 * N(0, 0.02) rounded to bf16, and a new version where each element changes with probability
 * {@code density} by ±1..4 on its 16-bit pattern (never crossing the sign or reaching NaN/Inf).
 * Everything depends only on the seed; tensors are generated in parallel with one stream each.
 */
public final class PublishWorkload implements AutoCloseable {

    static final long FULL_SIZE = 1L << 30;
    public static final long SEED = 42;

    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Arena arena = Arena.ofShared();
    private final List<TensorData> base;

    private PublishWorkload(long size) {
        double scale = Math.sqrt((double) size / FULL_SIZE);
        List<TensorSpec> specs = specs(scale);
        short[] gaussian = gaussianTable(SEED);
        List<TensorData> tensors = new ArrayList<>();
        for (TensorSpec s : specs) {
            tensors.add(new TensorData(s, arena.allocate(Math.max(2, s.byteLength()), 64).asSlice(0, s.byteLength())));
        }
        IntStream.range(0, tensors.size()).parallel().forEach(i -> {
            SplittableRandom r = new SplittableRandom(SEED * 1_000_003L + i);
            MemorySegment seg = tensors.get(i).bytes();
            long n = tensors.get(i).spec().numel();
            for (long k = 0; k < n; k++) {
                seg.set(BF16, 2 * k, gaussian[r.nextInt() & 0xFFFF]);
            }
        });
        this.base = List.copyOf(tensors);
    }

    /** The base weights of a model of about {@code size} bytes. */
    public static PublishWorkload generate(long size) {
        if (size < 4096) {
            throw new IllegalArgumentException("the publish workload needs at least 4k bytes, got " + size);
        }
        return new PublishWorkload(size);
    }

    public List<TensorData> base() {
        return base;
    }

    long sizeBytes() {
        long n = 0;
        for (TensorData t : base) {
            n += t.spec().byteLength();
        }
        return n;
    }

    /** A new version of the weights at {@code density}, in memory owned by this workload. */
    public List<TensorData> step(double density, long seed) {
        List<TensorData> out = new ArrayList<>(base.size());
        for (TensorData t : base) {
            MemorySegment copy = arena.allocate(Math.max(2, t.spec().byteLength()), 64).asSlice(0, t.spec().byteLength());
            copy.copyFrom(t.bytes());
            out.add(new TensorData(t.spec(), copy));
        }
        IntStream.range(0, out.size()).parallel().forEach(i -> perturb(out.get(i), density,
                new SplittableRandom(seed * 7_919L + i * 104_729L + Double.doubleToLongBits(density))));
        return List.copyOf(out);
    }

    /** Bernoulli(p) positions drawn by geometric skips, each moved by ±k with k = 1 (90%), 2 (8%), 3–4 (2%). */
    private static void perturb(TensorData t, double p, SplittableRandom r) {
        if (p <= 0) {
            return;
        }
        long n = t.spec().numel();
        MemorySegment seg = t.bytes();
        double logQ = Math.log1p(-Math.min(p, 1 - 1e-12));
        long i = -1;
        while (true) {
            long skip = p >= 1 ? 0 : (long) Math.floor(Math.log(1 - r.nextDouble()) / logQ);
            i += skip + 1;
            if (i >= n || i < 0) {
                return;
            }
            int u = r.nextInt(100);
            int k = u < 90 ? 1 : u < 98 ? 2 : 3 + r.nextInt(2);
            int sign = r.nextBoolean() ? 1 : -1;
            int bits = seg.get(BF16, 2 * i) & 0xFFFF;
            int magnitude = bits & 0x7FFF;
            int moved = magnitude + sign * k;
            if (moved < 0 || moved >= 0x7F80) {
                moved = magnitude - sign * k;
            }
            seg.set(BF16, 2 * i, (short) ((bits & 0x8000) | moved));
        }
    }

    /** The 19 tensors of 7.1, both dimensions scaled by {@code scale}. */
    static List<TensorSpec> specs(double scale) {
        long h = dim(4096, scale);
        long inter = dim(11008, scale);
        List<TensorSpec> specs = new ArrayList<>();
        specs.add(new TensorSpec("model.embed_tokens.weight", Dtype.BF16, new long[] {dim(32252, scale), h}));
        for (int l = 0; l < 2; l++) {
            String p = "model.layers." + l + ".";
            for (String proj : new String[] {"q_proj", "k_proj", "v_proj", "o_proj"}) {
                specs.add(new TensorSpec(p + "self_attn." + proj + ".weight", Dtype.BF16, new long[] {h, h}));
            }
            specs.add(new TensorSpec(p + "mlp.gate_proj.weight", Dtype.BF16, new long[] {inter, h}));
            specs.add(new TensorSpec(p + "mlp.up_proj.weight", Dtype.BF16, new long[] {inter, h}));
            specs.add(new TensorSpec(p + "mlp.down_proj.weight", Dtype.BF16, new long[] {h, inter}));
            specs.add(new TensorSpec(p + "input_layernorm.weight", Dtype.BF16, new long[] {h}));
            specs.add(new TensorSpec(p + "post_attention_layernorm.weight", Dtype.BF16, new long[] {h}));
        }
        return specs;
    }

    private static long dim(long full, double scale) {
        return Math.max(1, Math.round(full * scale));
    }

    /** 65536 samples of N(0, 0.02) rounded to bf16 (round to nearest even), indexed by 16 random bits. */
    private static short[] gaussianTable(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        short[] t = new short[1 << 16];
        for (int i = 0; i < t.length; i++) {
            int f = Float.floatToRawIntBits((float) (r.nextGaussian() * 0.02));
            t[i] = (short) ((f + 0x7FFF + ((f >>> 16) & 1)) >>> 16);
        }
        return t;
    }

    @Override
    public void close() {
        arena.close();
    }
}
