package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.LE32;
import static dev.stitch.kernels.KernelArgs.LE64;
import static dev.stitch.kernels.KernelArgs.U8;

import java.lang.foreign.MemorySegment;

/** Little-endian elements of 1, 2, 4 or 8 bytes and positions of 4 or 8 bytes, read and written on segments by the Java kernels. */
final class ElementAccess {

    private ElementAccess() {
    }

    /** The element of {@code width} bytes at {@code byteOffset}, zero-extended. */
    static long get(MemorySegment seg, int width, long byteOffset) {
        return switch (width) {
            case 1 -> seg.get(U8, byteOffset) & 0xFFL;
            case 2 -> seg.get(LE16, byteOffset) & 0xFFFFL;
            case 4 -> seg.get(LE32, byteOffset) & 0xFFFF_FFFFL;
            default -> seg.get(LE64, byteOffset);
        };
    }

    /** Writes the low {@code width} bytes of {@code value} at {@code byteOffset}. */
    static void set(MemorySegment seg, int width, long byteOffset, long value) {
        switch (width) {
            case 1 -> seg.set(U8, byteOffset, (byte) value);
            case 2 -> seg.set(LE16, byteOffset, (short) value);
            case 4 -> seg.set(LE32, byteOffset, (int) value);
            default -> seg.set(LE64, byteOffset, value);
        }
    }

    /** The bits of one {@code width}-byte lane of a 64-bit word. */
    static long laneMask(int width) {
        return width == 8 ? -1L : (1L << (8 * width)) - 1;
    }

    /** Writes position {@code k} of a stream of {@code positionWidth}-byte unsigned integers. */
    static void writePosition(MemorySegment positions, int positionWidth, long k, long index) {
        if (positionWidth == 4) {
            positions.set(LE32, k << 2, (int) index);
        } else {
            positions.set(LE64, k << 3, index);
        }
    }
}
