/*
 * The apply kernels: scatter (or XOR) values into a tensor at plain or escaped-gap positions, XOR a
 * whole payload in, and patch single bytes.
 */
#include "stitch_internal.h"

/* Returns count, or -(k+1) when position k is not below limit (elements before it are written). */
STITCH_EXPORT int64_t stitch_scatter(uint8_t *dst, int64_t limit, int32_t w, const uint8_t *pos, int32_t pw,
                                     const uint8_t *values, int64_t count, int32_t xor_values) {
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        if (p >= (uint64_t) limit) {
            return -(k + 1);
        }
        uint8_t *d = dst + p * (uint64_t) w;
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
    }
    return count;
}

/* Applies a stream the caller validated with stitch_escaped_summary. */
STITCH_EXPORT int64_t stitch_scatter_escaped(uint8_t *dst, int32_t w, const uint8_t *units, int64_t unit_count,
                                             const uint8_t *values, int32_t xor_values) {
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    if (w == 2 && !xor_values) {
        for (int64_t u = 0; u < unit_count; u++) {
            uint32_t unit = ld16(units + 2 * u);
            gap += unit;
            if (__builtin_expect(unit == 0xFFFF, 0)) {
                continue;
            }
            prev += gap + 1;
            gap = 0;
            st16(dst + 2 * prev, ld16(values + 2 * k));
            k++;
        }
        return k;
    }
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (unit == 0xFFFF) {
            continue;
        }
        prev += gap + 1;
        gap = 0;
        uint8_t *d = dst + prev * w;
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
        k++;
    }
    return k;
}

STITCH_EXPORT void stitch_xor_into(uint8_t *dst, const uint8_t *payload, int64_t bytes) {
    int64_t off = 0;
    for (; off + 8 <= bytes; off += 8) {
        st64(dst + off, ld64(dst + off) ^ ld64(payload + off));
    }
    for (; off < bytes; off++) {
        dst[off] ^= payload[off];
    }
}

/* Validates every offset first, so a bad one writes nothing; returns count or -(k+1). */
STITCH_EXPORT int64_t stitch_overwrite_bytes(uint8_t *dst, int64_t dst_bytes, const uint8_t *offsets, const uint8_t *bytes, int64_t count) {
    for (int64_t k = 0; k < count; k++) {
        if ((int64_t) ld32(offsets + 4 * k) >= dst_bytes) {
            return -(k + 1);
        }
    }
    for (int64_t k = 0; k < count; k++) {
        dst[ld32(offsets + 4 * k)] = bytes[k];
    }
    return count;
}
