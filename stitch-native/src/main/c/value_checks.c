/*
 * Whole-array checks of values: the NaN scan, and the slime v1 checksums (XOR of bytes, XOR of
 * values widened to binary64).
 */
#include "stitch_internal.h"

static inline int is_nan(uint64_t b, int32_t kind) {
    switch (kind) {
        case 1: return (b & 0x7FFF) > 0x7F80;
        case 2: return (b & 0x7FFF) > 0x7C00;
        case 3: return (b & 0x7FFFFFFFULL) > 0x7F800000ULL;
        case 4: return (b & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL;
        case 5: return (b & 0x7F) == 0x7F;
        case 6: return (b & 0x7F) > 0x7C;
        case 7: return (b & 0xFF) == 0xFF;
        default: return 0;
    }
}

static inline int32_t kind_width(int32_t kind) {
    switch (kind) {
        case 1: case 2: return 2;
        case 3: return 4;
        case 4: return 8;
        default: return 1;
    }
}

STITCH_EXPORT int32_t stitch_contains_nan(const uint8_t *values, int64_t count, int32_t kind) {
    int32_t w = kind_width(kind);
    int found = 0;
    /* Branch-free accumulation over blocks lets the compiler vectorise the common (no NaN) case. */
    int64_t i = 0;
    for (; i + 256 <= count && !found; i += 256) {
        int acc = 0;
        for (int64_t j = i; j < i + 256; j++) {
            acc |= is_nan(ld_elem(values + j * w, w), kind);
        }
        found = acc;
    }
    for (; i < count && !found; i++) {
        found = is_nan(ld_elem(values + i * w, w), kind);
    }
    return found;
}

STITCH_EXPORT int64_t stitch_xor_bytes(const uint8_t *data, int64_t bytes) {
    uint64_t x = 0;
    int64_t off = 0;
    for (; off + 8 <= bytes; off += 8) {
        x ^= ld64(data + off);
    }
    for (; off < bytes; off++) {
        x ^= data[off];
    }
    x ^= x >> 32;
    x ^= x >> 16;
    x ^= x >> 8;
    return (int64_t) (x & 0xFF);
}

/* binary32 bits to binary64 bits; NaNs keep their payload and gain the quiet bit (x86 behaviour). */
static inline uint64_t widen_f32(uint32_t b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
        return ((uint64_t) (b >> 31) << 63) | 0x7FF8000000000000ULL | ((uint64_t) (b & 0x7FFFFF) << 29);
    }
    float f;
    memcpy(&f, &b, 4);
    double d = (double) f;
    uint64_t r;
    memcpy(&r, &d, 8);
    return r;
}

static inline uint64_t widen_f16(uint32_t b) {
    uint64_t sign = (uint64_t) (b >> 15) << 63;
    uint32_t e = (b >> 10) & 0x1F;
    uint64_t m = b & 0x3FF;
    if (e == 0x1F) {
        return m ? (sign | 0x7FF8000000000000ULL | (m << 42)) : (sign | 0x7FF0000000000000ULL);
    }
    if (e == 0) {
        if (m == 0) {
            return sign;
        }
        /* Subnormal: normalise the mantissa; value = m * 2^-24. */
        int shift = __builtin_clzll(m) - 53; /* bring the leading 1 to bit 10 */
        m <<= shift;
        int64_t exp = -14 - shift + 1023;
        return sign | ((uint64_t) exp << 52) | ((m & 0x3FF) << 42);
    }
    return sign | ((uint64_t) (e - 15 + 1023) << 52) | (m << 42);
}

STITCH_EXPORT int64_t stitch_xor_widened(const uint8_t *values, int64_t count, int32_t kind) {
    uint64_t x = 0;
    if (kind == 1) {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f32((uint32_t) ld16(values + 2 * i) << 16);
        }
    } else if (kind == 2) {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f16(ld16(values + 2 * i));
        }
    } else {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f32(ld32(values + 4 * i));
        }
    }
    return (int64_t) x;
}
