package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.LE32;
import static dev.stitch.kernels.KernelArgs.LE64;
import static dev.stitch.kernels.KernelArgs.U8;

import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;

/** Whole-array checks of values in Java: the NaN scan, and the slime v1 checksums (XOR of bytes, XOR of values widened to binary64). */
final class JavaValueChecks {

    private JavaValueChecks() {
    }

    static boolean containsNaN(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.nanArgs(values, dtype, count);
        if (!dtype.isFloatingPoint()) {
            return false;
        }
        for (long i = 0; i < count; i++) {
            if (isNaN(dtype, ElementAccess.get(values, dtype.width(), i * dtype.width()))) {
                return true;
            }
        }
        return false;
    }

    static boolean isNaN(Dtype dtype, long bits) {
        return switch (dtype) {
            case BF16 -> (bits & 0x7FFF) > 0x7F80;
            case F16 -> (bits & 0x7FFF) > 0x7C00;
            case F32 -> (bits & 0x7FFF_FFFFL) > 0x7F80_0000L;
            case F64 -> (bits & Long.MAX_VALUE) > 0x7FF0_0000_0000_0000L;
            case F8_E4M3 -> (bits & 0x7F) == 0x7F;
            case F8_E5M2 -> (bits & 0x7F) > 0x7C;
            case F8_E8M0 -> (bits & 0xFF) == 0xFF;
            default -> false;
        };
    }

    static long xorBytes(MemorySegment data) {
        long bytes = data.byteSize();
        long words = bytes >>> 3;
        long x = 0;
        for (long w = 0; w < words; w++) {
            x ^= data.get(LE64, w << 3);
        }
        for (long off = words << 3; off < bytes; off++) {
            x ^= data.get(U8, off) & 0xFFL;
        }
        x ^= x >>> 32;
        x ^= x >>> 16;
        x ^= x >>> 8;
        return x & 0xFF;
    }

    static long xorWidenedValues(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.widenedArgs(values, dtype, count);
        long x = 0;
        switch (dtype) {
            case BF16 -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF32((values.get(LE16, i << 1) & 0xFFFF) << 16);
                }
            }
            case F16 -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF16(values.get(LE16, i << 1));
                }
            }
            default -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF32(values.get(LE32, i << 2));
                }
            }
        }
        return x;
    }

    /** binary32 bits to binary64 bits; a NaN keeps its payload and gets the quiet bit, as x86 does. */
    static long widenF32(int bits) {
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return ((long) (bits >>> 31) << 63) | 0x7FF8_0000_0000_0000L | ((long) (bits & 0x7F_FFFF) << 29);
        }
        return Double.doubleToRawLongBits(Float.intBitsToFloat(bits));
    }

    /** binary16 bits to binary64 bits, NaN handled like {@link #widenF32}. */
    static long widenF16(short bits) {
        int b = bits & 0xFFFF;
        if ((b & 0x7FFF) > 0x7C00) {
            return ((long) (b >>> 15) << 63) | 0x7FF8_0000_0000_0000L | ((long) (b & 0x3FF) << 42);
        }
        return Double.doubleToRawLongBits(Float.float16ToFloat(bits));
    }
}
