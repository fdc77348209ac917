package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.sparse.SparseDeltaWriter;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The size target of docs/formats/stitch-delta.md §4.3 on a scaled-down version of the 7.1 workload (bf16 N(0, 0.02),
 * 3% uniform changes of ±1..4 units in the last place): stitch_delta must be at most 0.55× (xor) and
 * 0.85× (overwrite) the bytes of the same version as our sparse_delta deltas_zstd.
 */
public class SizeTargetTest {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    /** Old and new bf16 tensors of the benchmark workload, seeded. */
    public static TensorChange workloadTensor(String name, int numel, double density, long seed, boolean xor) {
        SplittableRandom r = new SplittableRandom(seed);
        MemorySegment old = MemorySegment.ofArray(new byte[numel * 2]);
        for (int i = 0; i < numel; i++) {
            float f = (float) (nextGaussian(r) * 0.02);
            int bits = Float.floatToRawIntBits(f);
            int bf = ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16) & 0xFFFF;
            old.set(U16, 2L * i, (short) bf);
        }
        MemorySegment neu = TestChanges.copy(old);
        List<Long> pos = new ArrayList<>();
        for (int i = 0; i < numel; i++) {
            if (r.nextDouble() >= density) {
                continue;
            }
            double u = r.nextDouble();
            int k = u < 0.90 ? 1 : u < 0.98 ? 2 : 3 + r.nextInt(2);
            int sign = r.nextBoolean() ? 1 : -1;
            int o = old.get(U16, 2L * i) & 0xFFFF;
            int n = o + sign * k;
            if (bad(o, n)) {
                n = o - sign * k;
            }
            if (bad(o, n)) {
                continue;
            }
            neu.set(U16, 2L * i, (short) n);
            pos.add((long) i);
        }
        return TestChanges.of(new TensorSpec(name, Dtype.BF16, new long[] {numel}), pos.stream().mapToLong(Long::longValue).toArray(), old, neu, xor);
    }

    private static boolean bad(int o, int n) {
        if (n < 0 || n > 0xFFFF || (n & 0x8000) != (o & 0x8000)) {
            return true;
        }
        return (n & 0x7F80) == 0x7F80;
    }

    private static double nextGaussian(SplittableRandom r) {
        double u1 = Math.max(r.nextDouble(), 1e-300);
        double u2 = r.nextDouble();
        return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    }

    @Test
    void stitchDeltaMeetsTheSizeTargets() throws IOException {
        List<TensorChange> changes = List.of(workloadTensor("model.layers.0.mlp.up_proj.weight", 4 << 20, 0.03, 42, true),
            workloadTensor("model.layers.0.self_attn.q_proj.weight", 1 << 20, 0.03, 43, true));
        long sparse = new SparseDeltaWriter(SparseEncoding.DELTAS_ZSTD, SparseDeltaWriter.DEFAULT_BUFFER_SIZE, 0)
            .write(1, changes, tmp.resolve("sparse")).encodedBytes();
        long xor = new StitchDeltaWriter(ValueMode.XOR, StitchDeltaWriter.DEFAULT_MAX_FILE_BYTES).write(1, changes, tmp.resolve("x")).encodedBytes();
        long ow = new StitchDeltaWriter(ValueMode.OVERWRITE, StitchDeltaWriter.DEFAULT_MAX_FILE_BYTES).write(1, changes, tmp.resolve("o")).encodedBytes();
        double rx = (double) xor / sparse;
        double ro = (double) ow / sparse;
        System.out.printf("deltas_zstd %d, stitch xor %d (%.3f), overwrite %d (%.3f)%n", sparse, xor, rx, ow, ro);
        assertTrue(rx <= 0.55, "xor ratio " + rx);
        assertTrue(ro <= 0.85, "overwrite ratio " + ro);
    }
}
