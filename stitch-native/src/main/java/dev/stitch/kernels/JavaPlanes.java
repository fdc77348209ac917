package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.U8;

import java.lang.foreign.MemorySegment;

/** Byte-plane split and merge in Java: plane b holds byte b of every element, so each byte position compresses on its own. */
final class JavaPlanes {

    private JavaPlanes() {
    }

    static void splitPlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        if (width == 2) {
            for (long i = 0; i < count; i++) {
                short v = src.get(LE16, i << 1);
                dst.set(U8, i, (byte) v);
                dst.set(U8, count + i, (byte) (v >>> 8));
            }
            return;
        }
        for (long i = 0; i < count; i++) {
            long v = ElementAccess.get(src, width, i * width);
            for (int b = 0; b < width; b++) {
                dst.set(U8, b * count + i, (byte) (v >>> (8 * b)));
            }
        }
    }

    static void mergePlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        if (width == 2) {
            for (long i = 0; i < count; i++) {
                int lo = src.get(U8, i) & 0xFF;
                int hi = src.get(U8, count + i) & 0xFF;
                dst.set(LE16, i << 1, (short) (lo | (hi << 8)));
            }
            return;
        }
        for (long i = 0; i < count; i++) {
            long v = 0;
            for (int b = 0; b < width; b++) {
                v |= (src.get(U8, b * count + i) & 0xFFL) << (8 * b);
            }
            ElementAccess.set(dst, width, i * width, v);
        }
    }
}
