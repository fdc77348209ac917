/*
 * Diff pieces shared by the diff variants: the element-by-element loop every variant finishes its
 * tail with, the emitter of a per-element change mask (diff.c, diff_x86.c, diff_neon.c), and the
 * bf16/f16 AVX-512 line kernel shared by the plain diff (diff_x86.c) and the diff fused with the
 * stream hash (diff_xxh3.c). All static inline, so each loop keeps them inlined with its flags constant.
 */
#ifndef STITCH_DIFF_INTERNAL_H
#define STITCH_DIFF_INTERNAL_H

#include "stitch_internal.h"

/* Element-by-element diff of [from, to) (byte offsets), appending at output slot k; returns the new k. */
static inline int64_t diff_range_scalar(uint8_t *old, const uint8_t *neu, int64_t from, int64_t to, int32_t w, int64_t base,
                                        uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update,
                                        int64_t k) {
    for (int64_t off = from; off < to; off += w) {
        uint64_t o = ld_elem(old + off, w);
        uint64_t n = ld_elem(neu + off, w);
        if (o != n) {
            st_pos(positions, pw, k, (uint64_t) base + (uint64_t) (off / w));
            st_elem(values + k * w, w, xor_values ? (o ^ n) : n);
            if (update) {
                st_elem(old + off, w, n);
            }
            k++;
        }
    }
    return k;
}

/*
 * Emits the elements flagged in a per-element change mask of one block starting at byte offset off
 * (bit j = element j of the block), lowest first.
 */
static inline int64_t emit_mask(uint8_t *old, const uint8_t *neu, int64_t off, uint64_t mask, int32_t w, int64_t base,
                                uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int64_t k) {
    int64_t first = base + off / w;
    while (mask) {
        int j = __builtin_ctzll(mask);
        mask &= mask - 1;
        uint64_t n = ld_elem(neu + off + (int64_t) j * w, w);
        uint64_t v = xor_values ? (n ^ ld_elem(old + off + (int64_t) j * w, w)) : n;
        st_pos(positions, pw, k, (uint64_t) (first + j));
        st_elem(values + k * w, w, v);
        k++;
    }
    return k;
}

#if defined(__x86_64__)

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

#endif
