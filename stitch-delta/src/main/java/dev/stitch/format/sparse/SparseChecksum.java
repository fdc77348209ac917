package dev.stitch.format.sparse;

import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteOrder;

/**
 * The slime v1 file checksum (docs/formats/sparse-delta.md §2.6): {@code p XOR (v << 1)} as an unbounded integer,
 * where {@code p} XORs the position bytes and {@code v} XORs each value widened exactly to binary64.
 */
public final class SparseChecksum {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private SparseChecksum() {
    }

    /** The checksum of a positions tensor and a values tensor of {@code valueDtype}. */
    public static BigInteger of(MemorySegment positions, MemorySegment values, Dtype valueDtype) {
        long p = xorBytes(positions);
        long v = xorWidened(values, valueDtype);
        return combine(p, v);
    }

    /** {@code p XOR (v << 1)} with 65-bit arithmetic. */
    public static BigInteger combine(long p, long v) {
        BigInteger vv = new BigInteger(Long.toUnsignedString(v)).shiftLeft(1);
        return vv.xor(BigInteger.valueOf(p));
    }

    /** XOR of all bytes, zero-extended. */
    public static long xorBytes(MemorySegment data) {
        long n = data.byteSize();
        long acc = 0;
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            acc ^= data.get(U64, i);
        }
        long r = 0;
        for (; i < n; i++) {
            r ^= data.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
        }
        long folded = acc ^ (acc >>> 32);
        folded ^= folded >>> 16;
        folded ^= folded >>> 8;
        return (folded ^ r) & 0xFF;
    }

    /** XOR of every value's exact binary64 widening; {@code dtype} is BF16, F16 or F32. */
    public static long xorWidened(MemorySegment values, Dtype dtype) {
        long acc = 0;
        switch (dtype) {
            case BF16 -> {
                long n = values.byteSize() / 2;
                for (long i = 0; i < n; i++) {
                    acc ^= widenF32((values.get(U16, 2 * i) & 0xFFFF) << 16);
                }
            }
            case F16 -> {
                long n = values.byteSize() / 2;
                for (long i = 0; i < n; i++) {
                    acc ^= widenF16(values.get(U16, 2 * i) & 0xFFFF);
                }
            }
            case F32 -> {
                long n = values.byteSize() / 4;
                for (long i = 0; i < n; i++) {
                    acc ^= widenF32(values.get(U32, 4 * i));
                }
            }
            default -> throw new IllegalArgumentException("sparse_delta values must be BF16, F16 or F32, not " + dtype);
        }
        return acc;
    }

    /** binary64 bits of an f32 widened exactly; NaN payloads move into place with the quiet bit set (x86). */
    static long widenF32(int bits) {
        if ((bits & 0x7F800000) == 0x7F800000 && (bits & 0x007FFFFF) != 0) {
            long sign = (long) (bits >>> 31) << 63;
            return sign | 0x7FF8000000000000L | ((long) (bits & 0x007FFFFF) << 29);
        }
        return Double.doubleToRawLongBits(Float.intBitsToFloat(bits));
    }

    /** binary64 bits of an f16 widened exactly. */
    static long widenF16(int bits) {
        if ((bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0) {
            long sign = (long) (bits >>> 15) << 63;
            return sign | 0x7FF8000000000000L | ((long) (bits & 0x03FF) << 42);
        }
        return Double.doubleToRawLongBits(Float.float16ToFloat((short) bits));
    }
}
