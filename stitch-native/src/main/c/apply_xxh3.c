/*
 * Apply fused with the XXH3-128 of the result: hash a tensor as patched without writing it, or
 * scatter and hash each block while it is in cache, saving old elements so a failed apply can be
 * undone.
 */
#include "stitch_internal.h"
#include "xxh3_internal.h"

/*
 * XXH3-128 of the bytes cur would hold after scattering (or XORing) count values at ascending
 * positions, without writing cur: each 16 KiB block is copied into L1, patched and hashed there,
 * so the tensor is read from memory once. A position below its block (not ascending) is ignored,
 * which can only produce a wrong digest, never a stray write.
 */
#define PATCH_BLOCK 16384
/* Returns count, or -(k+1) when position k is at or past the end (out is then not written). */
STITCH_EXPORT int64_t stitch_patched_xxh3(const uint8_t *cur, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                          const uint8_t *values, int64_t count, int32_t xor_values, uint64_t *out) {
    uint64_t st[XS_WORDS];
    uint8_t buf[PATCH_BLOCK] __attribute__((aligned(64)));
    stitch_xxh3_stream_reset(st);
    int64_t k = 0;
    for (int64_t off = 0; off < bytes; off += PATCH_BLOCK) {
        int64_t n = bytes - off < PATCH_BLOCK ? bytes - off : PATCH_BLOCK;
        memcpy(buf, cur + off, (size_t) n);
        uint64_t first = (uint64_t) off / (uint64_t) w;
        uint64_t end = (uint64_t) (off + n) / (uint64_t) w;
        for (; k < count; k++) {
            uint64_t p = ld_pos(pos, pw, k);
            if (p >= end) {
                break;
            }
            if (p >= first) {
                uint8_t *d = buf + (p - first) * (uint64_t) w;
                uint64_t v = ld_elem(values + k * w, w);
                st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
            }
        }
        stitch_xxh3_stream_update(st, buf, n);
    }
    if (k < count) {
        return -(k + 1);
    }
    stitch_xxh3_stream_digest(st, out);
    return count;
}

/*
 * Fused apply and hash: scatters (or XORs) count values into dst at positions and returns the
 * XXH3-128 of dst's new bytes, hashing each 16 KiB block right after patching it, so dst is read
 * from memory once. Every element's old bytes are saved to undo[k] before it is written. Returns
 * count; or, when position k is at or past the end, puts dst back from undo and returns -(k+1).
 */
static void restore_undo(uint8_t *dst, int32_t w, const uint8_t *pos, int32_t pw, const uint8_t *undo, int64_t count) {
    /* newest first, so repeated or unordered positions still end at their original bytes */
    for (int64_t k = count - 1; k >= 0; k--) {
        st_elem(dst + ld_pos(pos, pw, k) * (uint64_t) w, w, ld_elem(undo + k * w, w));
    }
}

STITCH_EXPORT int64_t stitch_scatter_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                          const uint8_t *values, int64_t count, int32_t xor_values, uint8_t *undo, uint64_t *out) {
    uint64_t st[XS_WORDS];
    stitch_xxh3_stream_reset(st);
    int64_t k = 0;
    for (int64_t off = 0; off < bytes; off += PATCH_BLOCK) {
        int64_t n = bytes - off < PATCH_BLOCK ? bytes - off : PATCH_BLOCK;
        uint64_t end = (uint64_t) (off + n) / (uint64_t) w;
        for (; k < count; k++) {
            uint64_t p = ld_pos(pos, pw, k);
            if (p >= end) {
                break;
            }
            uint8_t *d = dst + p * (uint64_t) w;
            uint64_t old = ld_elem(d, w);
            uint64_t v = ld_elem(values + k * w, w);
            st_elem(undo + k * w, w, old);
            st_elem(d, w, xor_values ? old ^ v : v);
        }
        stitch_xxh3_stream_update(st, dst + off, n);
    }
    if (k < count) {
        restore_undo(dst, w, pos, pw, undo, k);
        return -(k + 1);
    }
    stitch_xxh3_stream_digest(st, out);
    return count;
}

STITCH_EXPORT void stitch_restore_undo(uint8_t *dst, int32_t w, const uint8_t *pos, int32_t pw, const uint8_t *undo, int64_t count) {
    restore_undo(dst, w, pos, pw, undo, count);
}

/*
 * As stitch_scatter_xxh3, with positions rebuilt from an escaped u16 gap stream the caller
 * validated with stitch_escaped_summary (so every position is inside dst and they strictly
 * ascend): a block is hashed once a position lands past it, while it is still in cache.
 */
STITCH_EXPORT void stitch_scatter_escaped_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *units, int64_t unit_count,
                                               const uint8_t *values, int32_t xor_values, uint8_t *undo, uint64_t *out) {
    uint64_t st[XS_WORDS];
    stitch_xxh3_stream_reset(st);
    int64_t hashed = 0;
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (__builtin_expect(unit == 0xFFFF, 0)) {
            continue;
        }
        prev += gap + 1;
        gap = 0;
        int64_t at = prev * w;
        while (at >= hashed + PATCH_BLOCK) {
            stitch_xxh3_stream_update(st, dst + hashed, PATCH_BLOCK);
            hashed += PATCH_BLOCK;
        }
        uint8_t *d = dst + at;
        uint64_t old = ld_elem(d, w);
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(undo + k * w, w, old);
        st_elem(d, w, xor_values ? old ^ v : v);
        k++;
    }
    stitch_xxh3_stream_update(st, dst + hashed, bytes - hashed);
    stitch_xxh3_stream_digest(st, out);
}
