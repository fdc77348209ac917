/*
 * The x86-64 diff kernels: AVX2 and AVX-512 variants of the diff and the change count, picked by
 * cpu_features.c when CPUID reports them.
 */
#include "stitch_internal.h"
#include "diff_internal.h"

#if defined(__x86_64__)

/* ---- diff: AVX2 -------------------------------------------------------------------------- */

/* Per-element "differs" mask of 32 bytes: one bit per element. */
__attribute__((target("avx2,bmi,bmi2,popcnt")))
static inline uint32_t neq_mask_avx2(__m256i a, __m256i b, int32_t w) {
    switch (w) {
        case 1: return ~(uint32_t) _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b));
        case 2: {
            uint32_t eq = (uint32_t) _mm256_movemask_epi8(_mm256_cmpeq_epi16(a, b));
            return (uint32_t) _pext_u32(~eq, 0x55555555u);
        }
        case 4: return (~(uint32_t) _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)))) & 0xFFu;
        default: return (~(uint32_t) _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, b)))) & 0xFu;
    }
}

__attribute__((target("avx2,bmi,bmi2,popcnt")))
int64_t diff_avx2(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                  uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        __m256i o0 = _mm256_loadu_si256((const __m256i *) (old + off));
        __m256i n0 = _mm256_loadu_si256((const __m256i *) (neu + off));
        __m256i o1 = _mm256_loadu_si256((const __m256i *) (old + off + 32));
        __m256i n1 = _mm256_loadu_si256((const __m256i *) (neu + off + 32));
        __m256i d = _mm256_or_si256(_mm256_xor_si256(o0, n0), _mm256_xor_si256(o1, n1));
        if (_mm256_testz_si256(d, d)) {
            continue;
        }
        uint32_t m0 = neq_mask_avx2(o0, n0, w);
        uint32_t m1 = neq_mask_avx2(o1, n1, w);
        int per = 32 / w;
        uint64_t mask = (uint64_t) m0 | ((uint64_t) m1 << per);
        k = emit_mask(old, neu, off, mask, w, base, positions, pw, values, xor_values, k);
        if (update) {
            _mm256_storeu_si256((__m256i *) (old + off), n0);
            _mm256_storeu_si256((__m256i *) (old + off + 32), n1);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, w, base, positions, pw, values, xor_values, update, k);
}

__attribute__((target("avx2,bmi,bmi2,popcnt")))
int64_t count_avx2(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    int64_t off = 0;
    for (; off + 32 <= bytes; off += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *) (old + off));
        __m256i b = _mm256_loadu_si256((const __m256i *) (neu + off));
        __m256i d = _mm256_xor_si256(a, b);
        if (!_mm256_testz_si256(d, d)) {
            c += __builtin_popcount(neq_mask_avx2(a, b, w));
        }
    }
    return c + count_scalar(old + off, neu + off, bytes - off, w);
}

/* ---- diff: AVX-512 ----------------------------------------------------------------------- */

__attribute__((target(AVX512)))
static inline uint64_t neq_mask_avx512(__m512i a, __m512i b, int32_t w) {
    switch (w) {
        case 1: return _mm512_cmpneq_epi8_mask(a, b);
        case 2: return _mm512_cmpneq_epi16_mask(a, b);
        case 4: return _mm512_cmpneq_epi32_mask(a, b);
        default: return _mm512_cmpneq_epi64_mask(a, b);
    }
}

__attribute__((target(AVX512)))
static int64_t diff_avx512_w2(uint8_t *old, const uint8_t *neu, int64_t bytes, int64_t base,
                              uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t off = 0;
    /* Constant flags in each loop let the compiler drop the untaken variants from the loop body. */
    if (pw == 4 && !xor_values && update) {
        /* Blocks of four lines that hold no change are skipped: at low density that branch is predictable and saves the gather work. */
        for (; off + 256 <= bytes; off += 256) {
            __m512i d = _mm512_or_si512(
                _mm512_or_si512(_mm512_xor_si512(_mm512_loadu_si512((const void *) (old + off)), _mm512_loadu_si512((const void *) (neu + off))),
                                _mm512_xor_si512(_mm512_loadu_si512((const void *) (old + off + 64)), _mm512_loadu_si512((const void *) (neu + off + 64)))),
                _mm512_or_si512(_mm512_xor_si512(_mm512_loadu_si512((const void *) (old + off + 128)), _mm512_loadu_si512((const void *) (neu + off + 128))),
                                _mm512_xor_si512(_mm512_loadu_si512((const void *) (old + off + 192)), _mm512_loadu_si512((const void *) (neu + off + 192)))));
            if (!_mm512_test_epi64_mask(d, d)) {
                continue;
            }
            for (int line = 0; line < 4; line++) {
                k = diff_avx512_w2_line(old, neu, off + 64 * line, base, positions, 4, values, 0, 1, k);
            }
        }
        for (; off + 64 <= bytes; off += 64) {
            k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, 0, 1, k);
        }
    } else if (pw == 4 && xor_values && update) {
        for (; off + 64 <= bytes; off += 64) {
            k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, 1, 1, k);
        }
    } else if (pw == 4 && xor_values) {
        /* the publisher's diff: the snapshot is only read, it advances after the version is durable */
        for (; off + 64 <= bytes; off += 64) {
            k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, 1, 0, k);
        }
    } else if (pw == 4 && !update) {
        for (; off + 64 <= bytes; off += 64) {
            k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, 0, 0, k);
        }
    } else {
        for (; off + 64 <= bytes; off += 64) {
            k = diff_avx512_w2_line(old, neu, off, base, positions, pw, values, xor_values, update, k);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, 2, base, positions, pw, values, xor_values, update, k);
}

__attribute__((target(AVX512)))
int64_t diff_avx512(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                    uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    if (w == 2) {
        return diff_avx512_w2(old, neu, bytes, base, positions, pw, values, xor_values, update);
    }
    int64_t k = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        __m512i o = _mm512_loadu_si512((const void *) (old + off));
        __m512i n = _mm512_loadu_si512((const void *) (neu + off));
        uint64_t mask = neq_mask_avx512(o, n, w);
        if (!mask) {
            continue;
        }
        k = emit_mask(old, neu, off, mask, w, base, positions, pw, values, xor_values, k);
        if (update) {
            _mm512_storeu_si512((void *) (old + off), n);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, w, base, positions, pw, values, xor_values, update, k);
}

__attribute__((target(AVX512)))
int64_t count_avx512(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        __m512i a = _mm512_loadu_si512((const void *) (old + off));
        __m512i b = _mm512_loadu_si512((const void *) (neu + off));
        c += __builtin_popcountll(neq_mask_avx512(a, b, w));
    }
    return c + count_scalar(old + off, neu + off, bytes - off, w);
}

#endif
