package dev.stitch.format.sparse;

import dev.stitch.tensor.Dtype;

/** Element conversions between the three sparse_delta value dtypes, round-to-nearest-even. */
final class SparseValues {

    private SparseValues() {
    }

    /** f32 bits of a {@code src} element (exact widening; NaN stays NaN). */
    static int toF32Bits(int bits, Dtype src) {
        return switch (src) {
            case BF16 -> bits << 16;
            case F16 -> {
                if ((bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0) {
                    yield ((bits & 0x8000) << 16) | 0x7FC00000 | ((bits & 0x03FF) << 13);
                }
                yield Float.floatToRawIntBits(Float.float16ToFloat((short) bits));
            }
            case F32 -> bits;
            default -> throw new IllegalArgumentException("not a sparse_delta value dtype: " + src);
        };
    }

    /** {@code dst} bits of an f32 value, round-to-nearest-even (exact for values that came from dst). */
    static int fromF32Bits(int f32, Dtype dst) {
        boolean nan = (f32 & 0x7F800000) == 0x7F800000 && (f32 & 0x007FFFFF) != 0;
        return switch (dst) {
            case F32 -> f32;
            case BF16 -> {
                if (nan) {
                    yield ((f32 >>> 16) | 0x0040) & 0xFFFF;
                }
                int rounding = 0x7FFF + ((f32 >>> 16) & 1);
                yield ((f32 + rounding) >>> 16) & 0xFFFF;
            }
            case F16 -> {
                if (nan) {
                    yield ((f32 >>> 16) & 0x8000) | 0x7E00;
                }
                yield Float.floatToFloat16(Float.intBitsToFloat(f32)) & 0xFFFF;
            }
            default -> throw new IllegalArgumentException("not a sparse_delta param dtype: " + dst);
        };
    }

    static int cast(int bits, Dtype src, Dtype dst) {
        if (src == dst) {
            return bits;
        }
        return fromF32Bits(toF32Bits(bits, src), dst);
    }

    static boolean isNaN(int bits, Dtype dtype) {
        return switch (dtype) {
            case BF16 -> (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0;
            case F16 -> (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0;
            case F32 -> (bits & 0x7F800000) == 0x7F800000 && (bits & 0x007FFFFF) != 0;
            default -> false;
        };
    }
}
