/*
 * The diff kernels: compare a snapshot with new weights, gather the changed elements' positions and
 * values (new, or XOR deltas), optionally update the snapshot; and count changes. This file holds
 * the scalar variants and the exported entry points; the SIMD variants live in diff_x86.c (AVX2,
 * AVX-512) and diff_neon.c / diff_sve.c (aarch64), picked by cpu_features.c.
 */
#include "stitch_internal.h"
#include "diff_internal.h"

/* ---- diff: scalar ------------------------------------------------------------------------ */

int64_t diff_scalar(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                    uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t off = 0;
    /* Skip identical 32-byte blocks quickly; examine the others element by element. */
    for (; off + 32 <= bytes; off += 32) {
        uint64_t d = (ld64(old + off) ^ ld64(neu + off)) | (ld64(old + off + 8) ^ ld64(neu + off + 8))
                   | (ld64(old + off + 16) ^ ld64(neu + off + 16)) | (ld64(old + off + 24) ^ ld64(neu + off + 24));
        if (d) {
            k = diff_range_scalar(old, neu, off, off + 32, w, base, positions, pw, values, xor_values, update, k);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, w, base, positions, pw, values, xor_values, update, k);
}

int64_t count_scalar(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    for (int64_t off = 0; off < bytes; off += w) {
        c += ld_elem(old + off, w) != ld_elem(neu + off, w);
    }
    return c;
}

/* ---- exported ---------------------------------------------------------------------------- */

STITCH_EXPORT int64_t stitch_count_changed(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width) {
    return count_impl(old, neu, bytes, width);
}

STITCH_EXPORT int64_t stitch_diff_gather(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                         uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    return diff_impl(old, neu, bytes, width, base, positions, pw, values, xor_values, update);
}
