/*
 * The bf16/f16 AVX-512 line kernel, shared by the plain diff (diff.c) and the diff fused with the
 * stream hash (diff_xxh3.c); static inline so each loop keeps it inlined with its flags constant.
 */
#ifndef STITCH_DIFF_INTERNAL_H
#define STITCH_DIFF_INTERNAL_H

#include "stitch_internal.h"

/*
 * bf16/f16 fast path: 32 elements per 64-byte line, branch-free (at a few percent density whether a
 * line or half-line holds a change is a coin flip, so branches would mispredict constantly).
 * Positions and values of each 16-element half are compressed in registers (vpcompressd on the
 * indices, and on the values widened to 32 bits) and stored whole; a store may write up to 16
 * slots past k, which stays inside the outputs because k never exceeds the number of elements
 * already scanned and the outputs hold one slot per element. The snapshot gets a masked store of
 * the changed elements only, so clean lines are never dirtied.
 */
__attribute__((target(AVX512)))
static inline int64_t diff_avx512_w2_line(uint8_t *old, const uint8_t *neu, int64_t off, int64_t base,
                                          uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update,
                                          int64_t k) {
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i o = _mm512_loadu_si512((const void *) (old + off));
    __m512i n = _mm512_loadu_si512((const void *) (neu + off));
    __mmask32 m = _mm512_cmpneq_epi16_mask(o, n);
    __m512i v = xor_values ? _mm512_xor_si512(o, n) : n;
    int64_t first = base + off / 2;
    __mmask16 m0 = (__mmask16) m;
    __mmask16 m1 = (__mmask16) (m >> 16);
    int c0 = __builtin_popcount(m0);
    int c1 = __builtin_popcount(m1);
    __m512i w0 = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v));
    __m512i w1 = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1));
    _mm256_storeu_si256((__m256i *) (values + 2 * k), _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(m0, w0)));
    _mm256_storeu_si256((__m256i *) (values + 2 * (k + c0)), _mm512_cvtepi32_epi16(_mm512_maskz_compress_epi32(m1, w1)));
    if (pw == 4) {
        __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32((int32_t) (uint32_t) first), iota);
        __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(16));
        _mm512_storeu_si512((void *) (positions + 4 * k), _mm512_maskz_compress_epi32(m0, i0));
        _mm512_storeu_si512((void *) (positions + 4 * (k + c0)), _mm512_maskz_compress_epi32(m1, i1));
    } else {
        __m512i i0 = _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_cvtepu32_epi64(_mm512_castsi512_si256(iota)));
        int64_t slot = k;
        for (int q = 0; q < 4; q++) {
            __mmask8 mq = (__mmask8) (m >> (8 * q));
            __m512i iq = _mm512_add_epi64(i0, _mm512_set1_epi64(8 * q));
            _mm512_storeu_si512((void *) (positions + 8 * slot), _mm512_maskz_compress_epi64(mq, iq));
            slot += __builtin_popcount(mq);
        }
    }
    if (update) {
        _mm512_mask_storeu_epi16((void *) (old + off), m, n);
    }
    return k + c0 + c1;
}

#endif
