/*
 * The diff fused with the streaming XXH3-128 of the new weights (stitch_diff_gather_xxh3), so the
 * publisher's digest does not read the tensor a second time: on AVX-512 the bf16 diff hashes the
 * lines its compare loaded; everywhere else the diff and the hash take turns on blocks small
 * enough to stay in L1.
 */
#include "stitch_internal.h"
#include "diff_internal.h"
#include "xxh3_internal.h"

/* Bytes the blocked fusion diffs before hashing them: they are still in L1 when the hash reads them. */
#define FUSE_BLOCK 4096

/* Diff and stream hash by turns, FUSE_BLOCK bytes at a time; equal to a whole diff followed by a whole update. */
static int64_t diff_hash_blocked(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                                 uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update,
                                 uint64_t *st) {
    int64_t k = 0;
    for (int64_t off = 0; off < bytes; off += FUSE_BLOCK) {
        int64_t n = bytes - off < FUSE_BLOCK ? bytes - off : FUSE_BLOCK;
        k += diff_impl(old + off, neu + off, n, w, base + off / w, positions + (int64_t) pw * k, pw, values + (int64_t) w * k,
                       xor_values, update);
        stitch_xxh3_stream_update(st, neu + off, n);
    }
    return k;
}

#if defined(__x86_64__)

/*
 * The bf16 diff with the XXH3 accumulate of each new 64-byte line done on the register the compare
 * already loaded: the diff waits on memory, so the hash's arithmetic runs in its shadow instead of
 * re-reading the bytes. acc/pos are the stream's accumulators and stripe position in its block.
 */
__attribute__((target(AVX512), always_inline))
static inline int64_t diff_w2_hash_loop(uint8_t *old, const uint8_t *neu, int64_t bytes, int64_t base, uint8_t *positions,
                                        uint8_t *values, int32_t xor_values, int32_t update, __m512i *acc, uint64_t *pos) {
    int64_t k = 0;
    __m512i a = *acc;
    uint64_t p = *pos;
    for (int64_t off = 0; off < bytes; off += 64) {
        k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, xor_values, update, k);
        a = xxh_stripe512(a, _mm512_loadu_si512((const void *) (neu + off)), SECRET + 8 * p);
        if (++p == 16) {
            a = xxh_scramble512(a, SECRET + 192 - 64);
            p = 0;
        }
    }
    *acc = a;
    *pos = p;
    return k;
}

__attribute__((target(AVX512)))
static int64_t diff_w2_hash(uint8_t *old, const uint8_t *neu, int64_t bytes, int64_t base, uint8_t *positions,
                            uint8_t *values, int32_t xor_values, int32_t update, uint64_t *st) {
    __m512i acc = _mm512_loadu_si512((const void *) st);
    uint64_t pos = st[XS_BLOCKPOS];
    int64_t k;
    /* constant flags per call let the compiler drop the untaken variants from the loop */
    if (xor_values && !update) {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, 1, 0, &acc, &pos);
    } else if (!xor_values && !update) {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, 0, 0, &acc, &pos);
    } else {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, xor_values, update, &acc, &pos);
    }
    _mm512_storeu_si512((void *) st, acc);
    st[XS_BLOCKPOS] = pos;
    return k;
}

#endif

/*
 * stitch_diff_gather that also feeds the new bytes into a streaming XXH3-128 state (see
 * stitch_xxh3_stream_update). The fused path needs bf16 with 4-byte positions, whole 64-byte
 * lines and a stream holding whole stripes back (what feeding 64-byte multiples leaves); it then
 * consumes the held-back stripes, hashes every line but the last as it diffs it, and holds that
 * last line back in turn. Anything else, and every aarch64 call, takes the blocked fusion.
 */
STITCH_EXPORT int64_t stitch_diff_gather_xxh3(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                              uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values,
                                              int32_t update, uint64_t *st) {
#if defined(__x86_64__)
    uint64_t buffered = st[XS_BUFFERED];
    /* below 241 bytes in all, the digest is a one-shot hash of the buffer, so nothing may be consumed */
    if (!fused_diff_hash || width != 2 || pw != 4 || bytes < 128 || bytes % 64 != 0 || buffered % 64 != 0
        || st[XS_TOTAL] + (uint64_t) bytes <= 240) {
        return diff_hash_blocked(old, neu, bytes, width, base, positions, pw, values, xor_values, update, st);
    }
    uint8_t *buf = (uint8_t *) (st + XS_BUF);
    uint8_t *last = (uint8_t *) (st + XS_LAST);
    if (buffered > 0) {
        xs_consume(st, buf, buffered / 64);
    }
    int64_t body = bytes - 64;
    int64_t k = diff_w2_hash(old, neu, body, base, positions, values, xor_values, update, st);
    k += diff_impl(old + body, neu + body, 64, 2, base + body / 2, positions + 4 * k, 4, values + 2 * k, xor_values, update);
    memcpy(last, neu + body - 64, 64);
    memcpy(buf, neu + body, 64);
    st[XS_BUFFERED] = 64;
    st[XS_TOTAL] += (uint64_t) bytes;
    return k;
#else
    return diff_hash_blocked(old, neu, bytes, width, base, positions, pw, values, xor_values, update, st);
#endif
}
