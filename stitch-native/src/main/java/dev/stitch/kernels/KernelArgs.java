package dev.stitch.kernels;

import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Argument checks and little-endian layouts shared by both implementations; the native kernels
 * trust their arguments, so every bound that keeps them inside their segments is checked here first.
 */
final class KernelArgs {

    static final ValueLayout.OfShort LE16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt LE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfByte U8 = ValueLayout.JAVA_BYTE;

    /** The largest value a 4-byte position can hold. */
    static final long U32_MAX = 0xFFFF_FFFFL;

    private KernelArgs() {
    }

    static void width(int width) {
        if (width != 1 && width != 2 && width != 4 && width != 8) {
            throw new IllegalArgumentException("element width must be 1, 2, 4 or 8 bytes, got " + width);
        }
    }

    static void positionWidth(int positionWidth) {
        if (positionWidth != 4 && positionWidth != 8) {
            throw new IllegalArgumentException("position width must be 4 or 8 bytes, got " + positionWidth);
        }
    }

    static void gapWidth(int gapWidth) {
        if (gapWidth != 2 && gapWidth != 4) {
            throw new IllegalArgumentException("gap width must be 2 or 4 bytes, got " + gapWidth);
        }
    }

    /** A piece of a gap stream counts its first gap from {@code firstIndex}, which must not lie past the first position. */
    static void startsAtOrAfter(MemorySegment positions, int positionWidth, long count, long firstIndex) {
        if (firstIndex < 0) {
            throw new IllegalArgumentException("first index " + firstIndex + " is negative");
        }
        if (count > 0 && firstIndex > 0) {
            long p0 = position(positions, positionWidth, 0);
            if (Long.compareUnsigned(p0, firstIndex) < 0) {
                throw new IllegalArgumentException("first position " + p0 + " lies before the first index " + firstIndex);
            }
        }
    }

    static void count(long count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative count " + count);
        }
    }

    /** Checks that {@code seg} holds at least {@code count} units of {@code unit} bytes. */
    static void holds(MemorySegment seg, long count, int unit, String what) {
        count(count);
        if (count > seg.byteSize() / unit) {
            throw new IllegalArgumentException(what + " holds " + seg.byteSize() + " bytes, needs " + count + " x " + unit);
        }
    }

    /** Kernels write through raw addresses, so a read-only segment must be refused before the call. */
    static void writable(MemorySegment seg, String what) {
        if (seg.isReadOnly()) {
            throw new IllegalArgumentException(what + " is read-only");
        }
    }

    static void wholeElements(MemorySegment seg, int width, String what) {
        if (seg.byteSize() % width != 0) {
            throw new IllegalArgumentException(what + ": " + seg.byteSize() + " bytes is not a whole number of " + width + "-byte elements");
        }
    }

    /** Returns the element count of two equally sized segments of whole elements. */
    static long pair(MemorySegment old, MemorySegment neu, int width) {
        width(width);
        if (old.byteSize() != neu.byteSize()) {
            throw new IllegalArgumentException("old has " + old.byteSize() + " bytes but new has " + neu.byteSize());
        }
        if (old.byteSize() % width != 0) {
            throw new IllegalArgumentException(old.byteSize() + " bytes is not a whole number of " + width + "-byte elements");
        }
        return old.byteSize() / width;
    }

    static void diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                           MemorySegment positions, int positionWidth, MemorySegment values, boolean updateSnapshot) {
        long n = pair(old, neu, width);
        positionWidth(positionWidth);
        if (baseIndex < 0) {
            throw new IllegalArgumentException("negative base index " + baseIndex);
        }
        holds(positions, n, positionWidth, "positions");
        holds(values, n, width, "values");
        writable(positions, "positions");
        writable(values, "values");
        if (updateSnapshot) {
            writable(old, "the snapshot (old)");
        }
        if (positionWidth == 4 && n > 0 && baseIndex + n - 1 > U32_MAX) {
            throw new IllegalArgumentException("element index " + (baseIndex + n - 1) + " does not fit a 4-byte position");
        }
    }

    static void nanArgs(MemorySegment values, Dtype dtype, long count) {
        holds(values, count, dtype.width(), "values");
    }

    static void widenedArgs(MemorySegment values, Dtype dtype, long count) {
        if (dtype != Dtype.BF16 && dtype != Dtype.F16 && dtype != Dtype.F32) {
            throw new IllegalArgumentException("slime v1 values are BF16, F16 or F32, not " + dtype);
        }
        holds(values, count, dtype.width(), "values");
    }

    static void planes(MemorySegment src, int width, long count, MemorySegment dst) {
        width(width);
        holds(src, count, width, "source");
        holds(dst, count, width, "destination");
        writable(dst, "destination");
    }

    static void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        width(width);
        positionWidth(positionWidth);
        holds(positions, count, positionWidth, "positions");
        holds(values, count, width, "values");
        writable(dst, "destination");
    }

    /** Arguments of {@code patchedXxh3}. */
    static void patched(MemorySegment current, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        width(width);
        positionWidth(positionWidth);
        holds(positions, count, positionWidth, "positions");
        holds(values, count, width, "values");
        wholeElements(current, width, "current");
    }

    /** Arguments of {@code scatterXxh3}: a scatter plus a writable undo buffer for {@code count} elements. */
    static void undoable(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count,
                         MemorySegment undo) {
        scatter(dst, width, positions, positionWidth, values, count);
        undoBuffer(dst, width, count, undo);
    }

    /** Arguments of {@code scatterEscapedXxh3}. */
    static void escapedUndoable(MemorySegment dst, int width, MemorySegment units, long unitCount, MemorySegment values, long count,
                                MemorySegment undo) {
        width(width);
        escaped(units, unitCount);
        holds(values, count, width, "values");
        writable(dst, "destination");
        undoBuffer(dst, width, count, undo);
    }

    private static void undoBuffer(MemorySegment dst, int width, long count, MemorySegment undo) {
        holds(undo, count, width, "undo");
        writable(undo, "undo");
        wholeElements(dst, width, "destination");
    }

    /** Position {@code k} of a stream of {@code positionWidth}-byte unsigned integers. */
    static long position(MemorySegment positions, int positionWidth, long k) {
        return positionWidth == 4 ? positions.get(LE32, k << 2) & U32_MAX : positions.get(LE64, k << 3);
    }

    static void escaped(MemorySegment units, long unitCount) {
        holds(units, unitCount, 2, "gap units");
    }

    static IllegalArgumentException positionOutOfRange(long position, long limit) {
        return new IllegalArgumentException("position " + position + " is outside the tensor's " + limit + " elements");
    }

    static IllegalArgumentException truncatedEscape() {
        return new IllegalArgumentException("gap stream ends inside an escape (trailing 0xFFFF unit)");
    }

    static IllegalArgumentException tooManyPositions(long maxCount) {
        return new IllegalArgumentException("gap stream holds more than the expected " + maxCount + " positions");
    }

    static IllegalArgumentException countMismatch(long decoded, long expected) {
        return new IllegalArgumentException("gap stream holds " + decoded + " positions, the record says " + expected);
    }
}
