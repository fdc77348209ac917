package dev.stitch.format;

import dev.stitch.encode.TensorChange;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Builds {@link TensorChange} records by a plain element-by-element diff, independent of the encoder. */
public final class TestChanges {

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private TestChanges() {
    }

    /** The change of one tensor, or null when no element differs. */
    public static TensorChange diff(TensorSpec spec, MemorySegment old, MemorySegment neu, boolean xor) {
        int w = spec.dtype().width();
        long numel = spec.numel();
        List<Long> idx = new ArrayList<>();
        for (long i = 0; i < numel; i++) {
            if (old.asSlice(i * w, w).mismatch(neu.asSlice(i * w, w)) != -1) {
                idx.add(i);
            }
        }
        if (idx.isEmpty()) {
            return null;
        }
        return of(spec, idx.stream().mapToLong(Long::longValue).toArray(), old, neu, xor);
    }

    /** A change at explicit sorted positions. */
    public static TensorChange of(TensorSpec spec, long[] positions, MemorySegment old, MemorySegment neu, boolean xor) {
        int w = spec.dtype().width();
        MemorySegment pos = MemorySegment.ofArray(new long[positions.length]);
        MemorySegment vals = MemorySegment.ofArray(new byte[positions.length * w]);
        for (int k = 0; k < positions.length; k++) {
            pos.set(U64, 8L * k, positions[k]);
            for (int b = 0; b < w; b++) {
                byte nb = neu.get(ValueLayout.JAVA_BYTE, positions[k] * w + b);
                byte ob = old.get(ValueLayout.JAVA_BYTE, positions[k] * w + b);
                vals.set(ValueLayout.JAVA_BYTE, (long) k * w + b, xor ? (byte) (nb ^ ob) : nb);
            }
        }
        return new TensorChange(spec, positions.length, pos, 8, vals, xor, old, neu);
    }

    /** Changes between two files with the same tensors, keyed by name (unchanged tensors left out). */
    public static Map<String, TensorChange> diff(SafetensorsFile old, SafetensorsFile neu, boolean xor) {
        Map<String, TensorChange> out = new TreeMap<>();
        for (TensorEntry e : neu.header().tensors()) {
            TensorChange c = diff(e.spec(), old.tensor(e.name()), neu.tensor(e.name()), xor);
            if (c != null) {
                out.put(e.name(), c);
            }
        }
        return out;
    }

    /** A heap copy of a segment. */
    public static MemorySegment copy(MemorySegment s) {
        return MemorySegment.ofArray(s.toArray(ValueLayout.JAVA_BYTE));
    }
}
