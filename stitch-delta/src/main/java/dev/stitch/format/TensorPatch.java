package dev.stitch.format;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A decoded, validated change of one tensor, independent of the format it came from: what to write
 * where, and the digest the tensor's new bytes must have (when the format carries one). The host
 * applier first computes the new bytes window by window to check the digest without writing
 * ({@link #patchWindow}), then writes in place ({@link #applyInPlace}).
 */
public final class TensorPatch {

    /** How {@link #values()} relate to the tensor. */
    public enum Kind {
        /** {@code t[pos[k]] = values[k]}. */
        SCATTER,
        /** {@code t[pos[k]] ^= values[k]}. */
        SCATTER_XOR,
        /** {@code t = values} (whole tensor). */
        DENSE_SET,
        /** {@code t ^= values} (whole tensor). */
        DENSE_XOR
    }

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final String name;
    private final long byteLength;
    private final int width;
    private final Kind kind;
    private final long[] positions;
    private final MemorySegment values;
    private final String expected;
    private final String digestFormat;

    /**
     * @param name         tensor name
     * @param byteLength   bytes of the tensor
     * @param width        bytes per element the positions index (1 for byte-granular formats)
     * @param kind         what the values mean
     * @param positions    ascending element indices for scatter kinds (null for dense kinds)
     * @param values       {@code positions.length * width} bytes, or {@code byteLength} for dense kinds
     * @param expected     hex digest of the new tensor bytes, or null when the format has none
     * @param digestFormat {@code xxh3-128} or {@code adler32} (ignored when expected is null)
     */
    public TensorPatch(String name, long byteLength, int width, Kind kind, long[] positions, MemorySegment values,
                       String expected, String digestFormat) {
        this.name = Objects.requireNonNull(name);
        this.byteLength = byteLength;
        this.width = width;
        this.kind = kind;
        this.positions = positions;
        this.values = values;
        this.expected = expected == null ? null : Digests.normalize(expected);
        this.digestFormat = digestFormat;
        boolean dense = kind == Kind.DENSE_SET || kind == Kind.DENSE_XOR;
        if (dense ? values.byteSize() != byteLength : values.byteSize() != (long) positions.length * width) {
            throw new IllegalArgumentException("patch of " + name + ": value bytes do not match");
        }
        if (!dense) {
            long prev = -1;
            for (long p : positions) {
                if (p <= prev || (p + 1) * width > byteLength) {
                    throw new DeltaFormatException("patch of " + name + ": position " + p + " out of order or out of range");
                }
                prev = p;
            }
        }
    }

    public String name() {
        return name;
    }

    public long byteLength() {
        return byteLength;
    }

    public Kind kind() {
        return kind;
    }

    public int width() {
        return width;
    }

    /** Number of elements written (whole tensor for dense kinds). */
    public long count() {
        return positions == null ? byteLength / Math.max(1, width) : positions.length;
    }

    public MemorySegment values() {
        return values;
    }

    /** The expected lowercase hex digest of the new tensor bytes, or null. */
    public String expected() {
        return expected;
    }

    public String digestFormat() {
        return digestFormat;
    }

    /**
     * Writes into {@code out} the new bytes of the window starting at byte {@code offset} of the tensor,
     * given the current bytes of that window in {@code current} (same size as {@code out}; may be the
     * same segment). {@code cursor[0]} carries the scatter position between consecutive windows and
     * must start at 0.
     */
    public void patchWindow(MemorySegment current, long offset, MemorySegment out, int[] cursor) {
        long len = out.byteSize();
        switch (kind) {
            case DENSE_SET -> MemorySegment.copy(values, offset, out, 0, len);
            case DENSE_XOR -> {
                if (current != out) {
                    MemorySegment.copy(current, 0, out, 0, len);
                }
                xorRange(out, values.asSlice(offset, len));
            }
            default -> {
                if (current != out) {
                    MemorySegment.copy(current, 0, out, 0, len);
                }
                int k = cursor[0];
                long end = offset + len;
                boolean xor = kind == Kind.SCATTER_XOR;
                while (k < positions.length && positions[k] * width < end) {
                    long at = positions[k] * width - offset;
                    long src = (long) k * width;
                    for (int b = 0; b < width; b++) {
                        byte v = values.get(ValueLayout.JAVA_BYTE, src + b);
                        if (xor) {
                            v ^= out.get(ValueLayout.JAVA_BYTE, at + b);
                        }
                        out.set(ValueLayout.JAVA_BYTE, at + b, v);
                    }
                    k++;
                }
                cursor[0] = k;
            }
        }
    }

    /** Applies the patch to the whole tensor in place. */
    public void applyInPlace(MemorySegment tensor) {
        if (tensor.byteSize() != byteLength) {
            throw new IllegalArgumentException("patch of " + name + " needs " + byteLength + " bytes, target has " + tensor.byteSize());
        }
        patchWindow(tensor, 0, tensor, new int[1]);
    }

    /** {@code dst ^= src} over equal-length segments, eight bytes at a time. */
    public static void xorRange(MemorySegment dst, MemorySegment src) {
        long n = dst.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            dst.set(U64, i, dst.get(U64, i) ^ src.get(U64, i));
        }
        for (; i < n; i++) {
            dst.set(ValueLayout.JAVA_BYTE, i, (byte) (dst.get(ValueLayout.JAVA_BYTE, i) ^ src.get(ValueLayout.JAVA_BYTE, i)));
        }
    }
}
