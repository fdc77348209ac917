/*
 * The x86-64 XXH3 stripe accumulate and scramble: AVX2 and AVX-512 variants, picked by
 * cpu_features.c when CPUID reports them.
 */
#include "stitch_internal.h"
#include "xxh3_internal.h"

#if defined(__x86_64__)

__attribute__((target("avx2")))
void xxh_accumulate_avx2(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    __m256i a0 = _mm256_loadu_si256((const __m256i *) acc);
    __m256i a1 = _mm256_loadu_si256((const __m256i *) (acc + 4));
    for (int64_t s = 0; s < stripes; s++) {
        const uint8_t *p = in + 64 * s;
        const uint8_t *k = secret + 8 * s;
        _mm_prefetch((const char *) (p + 512), _MM_HINT_T0);
        __m256i d0 = _mm256_loadu_si256((const __m256i *) p);
        __m256i d1 = _mm256_loadu_si256((const __m256i *) (p + 32));
        __m256i x0 = _mm256_xor_si256(d0, _mm256_loadu_si256((const __m256i *) k));
        __m256i x1 = _mm256_xor_si256(d1, _mm256_loadu_si256((const __m256i *) (k + 32)));
        __m256i m0 = _mm256_mul_epu32(x0, _mm256_srli_epi64(x0, 32));
        __m256i m1 = _mm256_mul_epu32(x1, _mm256_srli_epi64(x1, 32));
        a0 = _mm256_add_epi64(a0, _mm256_add_epi64(m0, _mm256_shuffle_epi32(d0, _MM_SHUFFLE(1, 0, 3, 2))));
        a1 = _mm256_add_epi64(a1, _mm256_add_epi64(m1, _mm256_shuffle_epi32(d1, _MM_SHUFFLE(1, 0, 3, 2))));
    }
    _mm256_storeu_si256((__m256i *) acc, a0);
    _mm256_storeu_si256((__m256i *) (acc + 4), a1);
}

__attribute__((target("avx2")))
void xxh_scramble_avx2(uint64_t *acc, const uint8_t *secret) {
    const __m256i prime = _mm256_set1_epi32((int) P32_1);
    for (int h = 0; h < 2; h++) {
        __m256i a = _mm256_loadu_si256((const __m256i *) (acc + 4 * h));
        a = _mm256_xor_si256(a, _mm256_srli_epi64(a, 47));
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *) (secret + 32 * h)));
        __m256i lo = _mm256_mul_epu32(a, prime);
        __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), prime);
        _mm256_storeu_si256((__m256i *) (acc + 4 * h), _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32)));
    }
}

/* Prefetches 512 bytes ahead: one stream from DRAM otherwise runs at about half the read bandwidth. */
__attribute__((target(AVX512_XXH)))
void xxh_accumulate_avx512(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    __m512i a = _mm512_loadu_si512((const void *) acc);
    for (int64_t s = 0; s < stripes; s++) {
        const uint8_t *p = in + 64 * s;
        _mm_prefetch((const char *) (p + 512), _MM_HINT_T0);
        a = xxh_stripe512(a, _mm512_loadu_si512((const void *) p), secret + 8 * s);
    }
    _mm512_storeu_si512((void *) acc, a);
}

__attribute__((target(AVX512_XXH)))
void xxh_scramble_avx512(uint64_t *acc, const uint8_t *secret) {
    _mm512_storeu_si512((void *) acc, xxh_scramble512(_mm512_loadu_si512((const void *) acc), secret));
}

#endif
