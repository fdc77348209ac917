/*
 * XXH3-128 internals shared by the hash (xxh3.c) and the kernels fused with it (diff_xxh3.c,
 * apply_xxh3.c): constants, the default secret, the streaming state layout, and (x86-64) the
 * AVX-512 stripe and scramble on accumulators held in a register.
 */
#ifndef STITCH_XXH3_INTERNAL_H
#define STITCH_XXH3_INTERNAL_H

#include "stitch_internal.h"

#define P32_1 0x9E3779B1ULL
#define P32_2 0x85EBCA77ULL
#define P32_3 0xC2B2AE3DULL
#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL
#define PMX1 0x165667919E3779F9ULL
#define PMX2 0x9FB21C651E98DF25ULL


/* Static, so the loads at fixed offsets fold into constants in every file that hashes. */
static const uint8_t SECRET[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/*
 * Streaming XXH3-128. The state is 64 u64 words owned by the caller (a Java long[]):
 * [0..7] accumulators, [8] bytes fed, [9] stripes consumed in the current 1 KiB block,
 * [10] bytes buffered, [16..23] the last consumed stripe, [24..55] a 256-byte buffer.
 * A stripe is consumed only once more input is known to follow it, because the one-shot
 * algorithm treats the final stripe differently; so at least one byte always stays buffered.
 */
#define XS_TOTAL 8
#define XS_BLOCKPOS 9
#define XS_BUFFERED 10
#define XS_LAST 16
#define XS_BUF 24
#define XS_BUFSIZE 256
#define XS_WORDS STITCH_XXH3_STATE_WORDS

#if defined(__x86_64__)
#define AVX512_XXH "avx512f,avx512bw"

/* One XXH3 stripe folded into the accumulators held in a register. */
__attribute__((target(AVX512_XXH), always_inline))
static inline __m512i xxh_stripe512(__m512i a, __m512i d, const uint8_t *secret) {
    __m512i x = _mm512_xor_si512(d, _mm512_loadu_si512((const void *) secret));
    __m512i m = _mm512_mul_epu32(x, _mm512_srli_epi64(x, 32));
    return _mm512_add_epi64(a, _mm512_add_epi64(m, _mm512_shuffle_epi32(d, (_MM_PERM_ENUM) _MM_SHUFFLE(1, 0, 3, 2))));
}

/* The end-of-block scramble of accumulators held in a register. */
__attribute__((target(AVX512_XXH), always_inline))
static inline __m512i xxh_scramble512(__m512i a, const uint8_t *secret) {
    const __m512i prime = _mm512_set1_epi32((int) P32_1);
    a = _mm512_xor_si512(a, _mm512_srli_epi64(a, 47));
    a = _mm512_xor_si512(a, _mm512_loadu_si512((const void *) secret));
    __m512i lo = _mm512_mul_epu32(a, prime);
    __m512i hi = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), prime);
    return _mm512_add_epi64(lo, _mm512_slli_epi64(hi, 32));
}
#endif

/* Accumulates whole stripes into a streaming state, scrambling at each 1 KiB block end. */
static inline void xs_consume(uint64_t *st, const uint8_t *in, uint64_t stripes) {
    uint64_t pos = st[XS_BLOCKPOS];
    while (stripes > 0) {
        uint64_t n = 16 - pos;
        if (n > stripes) {
            n = stripes;
        }
        xxh_accumulate(st, in, SECRET + 8 * pos, (int64_t) n);
        in += 64 * n;
        stripes -= n;
        pos += n;
        if (pos == 16) {
            xxh_scramble(st, SECRET + 192 - 64);
            pos = 0;
        }
    }
    st[XS_BLOCKPOS] = pos;
}

#endif
