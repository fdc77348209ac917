/*
 * Streaming primitives that measure the memory-traffic floor the kernels are compared against.
 */
#include "stitch_internal.h"

/* Reads every byte (the streaming read bandwidth B_r); returns an XOR so nothing is optimised away. */
#if defined(__x86_64__)
__attribute__((target("avx2")))
uint64_t read_avx2(const uint8_t *p, int64_t bytes) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    int64_t off = 0;
    for (; off + 128 <= bytes; off += 128) {
        a = _mm256_xor_si256(a, _mm256_loadu_si256((const __m256i *) (p + off)));
        b = _mm256_xor_si256(b, _mm256_loadu_si256((const __m256i *) (p + off + 32)));
        c = _mm256_xor_si256(c, _mm256_loadu_si256((const __m256i *) (p + off + 64)));
        d = _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *) (p + off + 96)));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    uint64_t x = (uint64_t) _mm256_extract_epi64(a, 0) ^ (uint64_t) _mm256_extract_epi64(a, 1)
               ^ (uint64_t) _mm256_extract_epi64(a, 2) ^ (uint64_t) _mm256_extract_epi64(a, 3);
    for (; off + 8 <= bytes; off += 8) {
        x ^= ld64(p + off);
    }
    for (; off < bytes; off++) {
        x ^= p[off];
    }
    return x;
}
#elif defined(__aarch64__)
/* Four independent accumulators of 16 bytes keep four loads in flight per iteration, as the AVX2 loop does with 32. */
uint64_t read_neon(const uint8_t *p, int64_t bytes) {
    uint64x2_t a = vdupq_n_u64(0), b = a, c = a, d = a;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        a = veorq_u64(a, vreinterpretq_u64_u8(vld1q_u8(p + off)));
        b = veorq_u64(b, vreinterpretq_u64_u8(vld1q_u8(p + off + 16)));
        c = veorq_u64(c, vreinterpretq_u64_u8(vld1q_u8(p + off + 32)));
        d = veorq_u64(d, vreinterpretq_u64_u8(vld1q_u8(p + off + 48)));
    }
    a = veorq_u64(veorq_u64(a, b), veorq_u64(c, d));
    uint64_t x = vgetq_lane_u64(a, 0) ^ vgetq_lane_u64(a, 1);
    for (; off + 8 <= bytes; off += 8) {
        x ^= ld64(p + off);
    }
    for (; off < bytes; off++) {
        x ^= p[off];
    }
    return x;
}
#endif

uint64_t read_scalar(const uint8_t *p, int64_t bytes) {
    uint64_t x = 0;
    int64_t off = 0;
    for (; off + 8 <= bytes; off += 8) {
        x ^= ld64(p + off);
    }
    for (; off < bytes; off++) {
        x ^= p[off];
    }
    return x;
}

STITCH_EXPORT uint64_t stitch_read_stream(const uint8_t *p, int64_t bytes) {
    return read_impl(p, bytes);
}

STITCH_EXPORT void stitch_fill_stream(uint8_t *p, int64_t bytes, int32_t value) {
    memset(p, value, (size_t) bytes);
}

