package dev.stitch.encode;

import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One changed tensor of a version, as the encoder hands it to a format writer: the sorted changed
 * element indices and their values, plus the whole old and new tensors for formats that need dense
 * bytes (disk_delta) or a digest of the new tensor. Segments are only valid during the write call.
 * A change diffed for stitch_delta carries {@link #escaped} planes instead of positions and values;
 * {@link #withPositions} turns it into the general form.
 *
 * @param spec          name, dtype, shape (unchanged between old and new)
 * @param count         number of changed elements (at least 1)
 * @param positions     {@code count} sorted element indices, unsigned little-endian of {@code positionWidth}
 *                      bytes; null when {@code escaped} is set
 * @param positionWidth 4 when the tensor has at most 2^32 elements, else 8
 * @param values        {@code count} elements of {@code spec.dtype().width()} bytes: the new bits, or
 *                      {@code new XOR old} when {@code xorValues}; null when {@code escaped} is set
 * @param xorValues     whether the values hold XORs rather than new bits
 * @param oldTensor     the whole tensor as last published (the snapshot)
 * @param newTensor     the whole tensor as it is now
 * @param newDigest     xxh3-128 of {@code newTensor} when the encoder computed it during the diff, else null
 * @param escaped       the same changes as stitch_delta's sparse planes, or null
 */
public record TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                           MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor,
                           Hash128 newDigest, EscapedPlanes escaped) {

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public TensorChange {
        if ((escaped == null) == (positions == null || values == null)) {
            throw new IllegalArgumentException("tensor " + spec.name()
                    + ": a change carries either positions and values or escaped planes");
        }
    }

    /** A change with positions and values and the digest of its new tensor, if known. */
    public TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                        MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor,
                        Hash128 newDigest) {
        this(spec, count, positions, positionWidth, values, xorValues, oldTensor, newTensor, newDigest, null);
    }

    /** A change whose new tensor's digest is not known yet (writers hash it when they need it). */
    public TensorChange(TensorSpec spec, long count, MemorySegment positions, int positionWidth,
                        MemorySegment values, boolean xorValues, MemorySegment oldTensor, MemorySegment newTensor) {
        this(spec, count, positions, positionWidth, values, xorValues, oldTensor, newTensor, null, null);
    }

    /** Changed element index {@code k}; the change must carry positions. */
    public long position(long k) {
        return position(positions, positionWidth, k);
    }

    /** Index {@code k} of a stream of unsigned little-endian positions of {@code positionWidth} bytes. */
    public static long position(MemorySegment positions, int positionWidth, long k) {
        return positionWidth == 4 ? positions.get(U32, 4 * k) & 0xFFFFFFFFL : positions.get(U64, 8 * k);
    }

    /** xxh3-128 of the new tensor: the one carried from the diff, or computed now with {@code kernels}. */
    public Hash128 newDigest(DeltaKernels kernels) {
        return newDigest != null ? newDigest : kernels.xxh3(newTensor);
    }

    /** This change with positions and values, decoded from its escaped planes into {@code memory} when it has none. */
    public TensorChange withPositions(DeltaKernels kernels, SegmentAllocator memory) {
        if (escaped == null) {
            return this;
        }
        int width = spec.dtype().width();
        MemorySegment units = memory.allocate(Math.max(1, 2 * escaped.units()), 8);
        kernels.mergePlanes(escaped.gapPlanes(), 2, escaped.units(), units);
        MemorySegment vals = memory.allocate(Math.max(1, count * width), 8).asSlice(0, count * width);
        kernels.mergePlanes(escaped.valuePlanes(), width, count, vals);
        MemorySegment pos = memory.allocate(Math.max(1, count * positionWidth), 8).asSlice(0, count * positionWidth);
        long decoded = kernels.decodeEscapedGaps(units, escaped.units(), pos, positionWidth, count, spec.numel());
        if (decoded != count) {
            throw new IllegalStateException("tensor " + spec.name() + ": escaped planes hold " + decoded
                    + " positions, expected " + count);
        }
        return new TensorChange(spec, count, pos, positionWidth, vals, xorValues, oldTensor, newTensor, newDigest, null);
    }

    /**
     * The changes of a tensor as stitch_delta's sparse streams before compression
     * (docs/formats/stitch-delta.md): the low and then the high bytes of the escaped u16 gap stream
     * ({@code units} bytes each), followed by the value planes ({@code count} bytes each, least
     * significant first).
     *
     * @param planes all planes back to back
     * @param units  u16 units of the gap stream
     */
    public record EscapedPlanes(MemorySegment planes, long units) {

        /** The two gap planes, {@code 2 * units} bytes. */
        public MemorySegment gapPlanes() {
            return planes.asSlice(0, 2 * units);
        }

        /** The value planes, everything after the gap planes. */
        public MemorySegment valuePlanes() {
            return planes.asSlice(2 * units);
        }
    }
}
