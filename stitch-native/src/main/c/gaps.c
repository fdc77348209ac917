/*
 * Gap coding of ascending positions: plain fixed-width gaps, and the escaped u16 stream (a unit of
 * 0xFFFF adds 65535 to the gap and continues it) with its encoder, checked decoder and summary.
 */
#include "stitch_internal.h"

STITCH_EXPORT int64_t stitch_max_gap(const uint8_t *pos, int32_t pw, int64_t count) {
    uint64_t prev = (uint64_t) -1;
    uint64_t max = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        uint64_t g = p - prev - 1;
        max = g > max ? g : max;
        prev = p;
    }
    return (int64_t) max;
}

STITCH_EXPORT void stitch_encode_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *gaps, int32_t gw) {
    uint64_t prev = (uint64_t) -1;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        st_elem(gaps + k * gw, gw, p - prev - 1);
        prev = p;
    }
}

STITCH_EXPORT void stitch_decode_gaps(const uint8_t *gaps, int32_t gw, int64_t count, uint8_t *pos, int32_t pw) {
    uint64_t prev = (uint64_t) -1;
    for (int64_t k = 0; k < count; k++) {
        prev += ld_elem(gaps + k * gw, gw) + 1;
        st_pos(pos, pw, k, prev);
    }
}

STITCH_EXPORT int64_t stitch_escaped_gap_units(const uint8_t *pos, int32_t pw, int64_t count) {
    uint64_t prev = (uint64_t) -1;
    int64_t units = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        units += (int64_t) ((p - prev - 1) / 65535) + 1;
        prev = p;
    }
    return units;
}

/* Returns the units written, or -1 when they would not fit in capacity units (then the output is partial). */
/* Gaps count from index first (g[0] = pos[0] - first), so a stream can be built in pieces. */
STITCH_EXPORT int64_t stitch_encode_escaped_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *units, int64_t capacity,
                                                 int64_t first) {
    uint64_t prev = (uint64_t) first - 1;
    int64_t u = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = pw == 4 ? (uint64_t) ld32(pos + 4 * k) : ld64(pos + 8 * k);
        uint64_t g = p - prev - 1;
        prev = p;
        if (__builtin_expect(g < 65535 && u < capacity, 1)) {
            st16(units + 2 * u++, (uint16_t) g);
            continue;
        }
        if ((uint64_t) (capacity - u) < g / 65535 + 1) {
            return -1;
        }
        for (uint64_t e = g / 65535; e > 0; e--) {
            st16(units + 2 * u++, 0xFFFF);
        }
        st16(units + 2 * u++, (uint16_t) (g % 65535));
    }
    return u;
}

/* Returns the positions decoded, or -1 (ends inside an escape), -2 (more than max_count), -3 (position >= limit, in detail[0]). */
static int64_t decode_escaped_checked(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                      int64_t max_count, int64_t limit, int64_t *detail);

STITCH_EXPORT int64_t stitch_decode_escaped_gaps(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                                 int64_t max_count, int64_t limit, int64_t *detail) {
    if (pw == 4 && limit <= (int64_t) 1 << 32) {
        /* Positions strictly ascend, so only the last can be out of range: the loop checks it once at
           the end, and any failure is decoded again by the checked loop to report it exactly. */
        int64_t prev = -1;
        int64_t gap = 0;
        int64_t k = 0;
        int bad = 0;
        for (int64_t u = 0; u < unit_count; u++) {
            uint32_t unit = ld16(units + 2 * u);
            gap += unit;
            if (__builtin_expect(unit == 0xFFFF, 0)) {
                continue;
            }
            if (__builtin_expect(k >= max_count, 0)) {
                bad = 1;
                break;
            }
            prev += gap + 1;
            gap = 0;
            st32(pos + 4 * k++, (uint32_t) prev);
        }
        if (!bad && gap == 0 && prev < limit) {
            return k;
        }
    }
    return decode_escaped_checked(units, unit_count, pos, pw, max_count, limit, detail);
}

static int64_t decode_escaped_checked(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                      int64_t max_count, int64_t limit, int64_t *detail) {
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (unit == 0xFFFF) {
            continue;
        }
        int64_t p = prev + gap + 1;
        if (k >= max_count) {
            return -2;
        }
        if (p >= limit || p < 0) {
            detail[0] = p;
            return -3;
        }
        st_pos(pos, pw, k++, (uint64_t) p);
        prev = p;
        gap = 0;
    }
    return gap != 0 ? -1 : k;
}

/* out[0] = sum of all unit values, out[1] = number of units that are not escapes. */
STITCH_EXPORT void stitch_escaped_summary(const uint8_t *units, int64_t unit_count, int64_t *out) {
    uint64_t sum = 0;
    uint64_t ends = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        sum += unit;
        ends += unit != 0xFFFF;
    }
    out[0] = (int64_t) sum;
    out[1] = (int64_t) ends;
}
