package dev.stitch.format.sparse;

import dev.stitch.format.TensorPatch;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Turns the params of a sparse_delta file into tensor patches the way the NaN-masked receiver
 * applies them (docs/formats/sparse-delta.md §2.9, 2.10): NaN values are left out and, among repeated indices,
 * the last entry wins.
 */
public final class SparsePatches {

    private SparsePatches() {
    }

    /** The NaN-masked patch of one sparse_delta param: values that are NaN after the cast are left out (2.10). */
    public static TensorPatch of(SparseDeltaFile f, int i) {
        SparseParam p = f.params().get(i);
        long[] idx = f.indices(i);
        int w = p.dtype().width();
        // keys = index << 31 | entry number: one primitive sort orders by index, and among repeats the
        // later entry (which sequential writes would leave in place) sorts last
        long[] keys = new long[idx.length];
        int n = 0;
        boolean ascending = true;
        long prev = -1;
        for (int k = 0; k < idx.length; k++) {
            if (idx[k] < 0 || idx[k] >= (1L << 32)) {
                return ofWideIndices(f, i, idx);
            }
            if (isNaN(f.valueBits(i, k), p.dtype())) {
                continue;
            }
            ascending &= idx[k] > prev;
            prev = idx[k];
            keys[n++] = idx[k] << 31 | k;
        }
        if (!ascending) {
            Arrays.sort(keys, 0, n);
        }
        long[] pos = new long[n];
        MemorySegment vals = MemorySegment.ofArray(new byte[Math.multiplyExact(n, w)]);
        int m = 0;
        for (int e = 0; e < n; e++) {
            long index = keys[e] >>> 31;
            if (e + 1 < n && keys[e + 1] >>> 31 == index) {
                continue;
            }
            int bits = f.valueBits(i, (int) (keys[e] & 0x7FFF_FFFFL));
            pos[m] = index;
            for (int b = 0; b < w; b++) {
                vals.set(ValueLayout.JAVA_BYTE, (long) m * w + b, (byte) (bits >>> (8 * b)));
            }
            m++;
        }
        return TensorPatch.scatter(p.name(), p.spec().byteLength(), w, false, Arrays.copyOf(pos, m),
            vals.asSlice(0, (long) m * w), null, null);
    }

    /** {@link #of} for a tensor of more than 2^32 elements, whose indices do not pack into a sort key. */
    private static TensorPatch ofWideIndices(SparseDeltaFile f, int i, long[] idx) {
        SparseParam p = f.params().get(i);
        int w = p.dtype().width();
        List<Integer> kept = new ArrayList<>();
        for (int k = 0; k < idx.length; k++) {
            if (!isNaN(f.valueBits(i, k), p.dtype())) {
                kept.add(k);
            }
        }
        // a stable sort keeps repeats in file order, so the last of each run is the one that wins
        kept.sort((a, b) -> Long.compare(idx[a], idx[b]));
        List<Integer> last = new ArrayList<>();
        for (int e = 0; e < kept.size(); e++) {
            if (e + 1 == kept.size() || idx[kept.get(e + 1)] != idx[kept.get(e)]) {
                last.add(kept.get(e));
            }
        }
        long[] pos = new long[last.size()];
        MemorySegment vals = MemorySegment.ofArray(new byte[Math.multiplyExact(last.size(), w)]);
        for (int m = 0; m < pos.length; m++) {
            int k = last.get(m);
            int bits = f.valueBits(i, k);
            pos[m] = idx[k];
            for (int b = 0; b < w; b++) {
                vals.set(ValueLayout.JAVA_BYTE, (long) m * w + b, (byte) (bits >>> (8 * b)));
            }
        }
        return TensorPatch.scatter(p.name(), p.spec().byteLength(), w, false, pos, vals, null, null);
    }

    private static boolean isNaN(int bits, Dtype d) {
        return switch (d) {
            case BF16 -> (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0;
            case F16 -> (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0;
            case F32 -> (bits & 0x7F800000) == 0x7F800000 && (bits & 0x007FFFFF) != 0;
            default -> false;
        };
    }
}
