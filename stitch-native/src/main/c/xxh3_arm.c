/*
 * The aarch64 XXH3 stripe accumulate and scramble: NEON variants (two 64-bit lanes per register,
 * four registers per stripe), and a vector-length agnostic SVE accumulate that cpu_features.c picks
 * with the SVE diff, when the vectors are wider than NEON's.
 */
#include "stitch_internal.h"
#include "xxh3_internal.h"

#if defined(__aarch64__)

#include <arm_sve.h>

/*
 * acc[i] += lo32(x[i]) * hi32(x[i]) with x = data ^ key, and acc[i ^ 1] += data[i]: the
 * 32 x 32 -> 64 multiply is UMULL on the narrowed halves, and swapping a register's two lanes
 * (EXT by one lane) routes each data word to its neighbour's accumulator.
 */
void xxh_accumulate_neon(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    uint64x2_t a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = vld1q_u64(acc + 2 * i);
    }
    for (int64_t s = 0; s < stripes; s++) {
        const uint8_t *p = in + 64 * s;
        const uint8_t *k = secret + 8 * s;
        for (int i = 0; i < 4; i++) {
            uint64x2_t d = vreinterpretq_u64_u8(vld1q_u8(p + 16 * i));
            uint64x2_t x = veorq_u64(d, vreinterpretq_u64_u8(vld1q_u8(k + 16 * i)));
            uint64x2_t m = vmull_u32(vmovn_u64(x), vshrn_n_u64(x, 32));
            a[i] = vaddq_u64(a[i], vaddq_u64(m, vextq_u64(d, d, 1)));
        }
    }
    for (int i = 0; i < 4; i++) {
        vst1q_u64(acc + 2 * i, a[i]);
    }
}

/* acc = (acc ^ acc >> 47 ^ key) * P32_1, the 64 x 32 multiply split into two UMULLs on the halves. */
void xxh_scramble_neon(uint64_t *acc, const uint8_t *secret) {
    for (int i = 0; i < 4; i++) {
        uint64x2_t a = vld1q_u64(acc + 2 * i);
        a = veorq_u64(a, vshrq_n_u64(a, 47));
        a = veorq_u64(a, vreinterpretq_u64_u8(vld1q_u8(secret + 16 * i)));
        uint64x2_t lo = vmull_n_u32(vmovn_u64(a), (uint32_t) P32_1);
        uint64x2_t hi = vmull_n_u32(vshrn_n_u64(a, 32), (uint32_t) P32_1);
        vst1q_u64(acc + 2 * i, vaddq_u64(lo, vshlq_n_u64(hi, 32)));
    }
}

/*
 * The eight accumulators in ceil(8 / lanes) registers of svcntd() lanes, inactive lanes past the
 * eighth masked off; bytes are loaded with byte predicates, so no address needs alignment. TBL
 * with indices i ^ 1 routes each data word to its neighbour's accumulator.
 */
__attribute__((target("+sve")))
void xxh_accumulate_sve(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    int64_t lanes = (int64_t) svcntd();
    svuint64_t swap = sveor_n_u64_x(svptrue_b64(), svindex_u64(0, 1), 1);
    for (int64_t j = 0; j < 8; j += lanes) {
        svbool_t pg = svwhilelt_b64_s64(j, 8);
        svbool_t bytes = svwhilelt_b8_s64(8 * j, 64);
        svuint64_t a = svld1_u64(pg, acc + j);
        for (int64_t s = 0; s < stripes; s++) {
            svuint64_t d = svreinterpret_u64_u8(svld1_u8(bytes, in + 64 * s + 8 * j));
            svuint64_t x = sveor_u64_x(pg, d, svreinterpret_u64_u8(svld1_u8(bytes, secret + 8 * s + 8 * j)));
            svuint64_t m = svmul_u64_x(pg, svand_n_u64_x(pg, x, 0xFFFFFFFFULL), svlsr_n_u64_x(pg, x, 32));
            a = svadd_u64_m(pg, a, svadd_u64_x(pg, m, svtbl_u64(d, swap)));
        }
        svst1_u64(pg, acc + j, a);
    }
}

#endif
