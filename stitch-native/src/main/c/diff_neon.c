/*
 * The aarch64 NEON diff kernels: the diff and the change count over 64-byte blocks, skipping
 * unchanged blocks with one horizontal max and emitting the changed elements of the others from a
 * per-element mask, as the AVX2 variant does (diff_x86.c). NEON is part of every aarch64 CPU;
 * cpu_features.c picks these unless capped to scalar or SVE is preferred.
 */
#include "stitch_internal.h"
#include "diff_internal.h"

#if defined(__aarch64__)

/* Lane j of each 8-byte half holds bit j: AND with 0x00/0xFF flags and an add across lanes gives a bitmask. */
static const uint8_t BIT_WEIGHTS[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};

/* One bit per byte of a vector of 0x00 / 0xFF flags (NEON has no movemask instruction). */
static inline uint64_t flags_to_bits16(uint8x16_t flags) {
    uint8x16_t bits = vandq_u8(flags, vld1q_u8(BIT_WEIGHTS));
    return (uint64_t) vaddv_u8(vget_low_u8(bits)) | ((uint64_t) vaddv_u8(vget_high_u8(bits)) << 8);
}

static inline uint64_t flags_to_bits8(uint8x8_t flags) {
    return vaddv_u8(vand_u8(flags, vld1_u8(BIT_WEIGHTS)));
}

/* Per-element "equal" mask of the 64-byte block o[0..3] / n[0..3]: bit j for element j. */
static inline uint64_t eq_mask_neon(const uint8x16_t *o, const uint8x16_t *n, int32_t w) {
    switch (w) {
        case 1:
            return flags_to_bits16(vceqq_u8(o[0], n[0])) | (flags_to_bits16(vceqq_u8(o[1], n[1])) << 16)
                 | (flags_to_bits16(vceqq_u8(o[2], n[2])) << 32) | (flags_to_bits16(vceqq_u8(o[3], n[3])) << 48);
        case 2: {
            /* narrow each 16-bit flag to a byte, so 16 elements make one flag vector */
            uint8x8_t e[4];
            for (int i = 0; i < 4; i++) {
                e[i] = vmovn_u16(vceqq_u16(vreinterpretq_u16_u8(o[i]), vreinterpretq_u16_u8(n[i])));
            }
            return flags_to_bits16(vcombine_u8(e[0], e[1])) | (flags_to_bits16(vcombine_u8(e[2], e[3])) << 16);
        }
        case 4: {
            uint16x4_t e[4];
            for (int i = 0; i < 4; i++) {
                e[i] = vmovn_u32(vceqq_u32(vreinterpretq_u32_u8(o[i]), vreinterpretq_u32_u8(n[i])));
            }
            return flags_to_bits16(vcombine_u8(vmovn_u16(vcombine_u16(e[0], e[1])), vmovn_u16(vcombine_u16(e[2], e[3]))));
        }
        default: {
            uint32x2_t e[4];
            for (int i = 0; i < 4; i++) {
                e[i] = vmovn_u64(vceqq_u64(vreinterpretq_u64_u8(o[i]), vreinterpretq_u64_u8(n[i])));
            }
            uint16x4_t lo = vmovn_u32(vcombine_u32(e[0], e[1]));
            uint16x4_t hi = vmovn_u32(vcombine_u32(e[2], e[3]));
            return flags_to_bits8(vmovn_u16(vcombine_u16(lo, hi)));
        }
    }
}

/* Per-element "differs" mask of a 64-byte block: the complement of eq_mask_neon over its 64 / w elements. */
static inline uint64_t neq_mask_neon(const uint8x16_t *o, const uint8x16_t *n, int32_t w) {
    uint64_t all = w == 1 ? ~(uint64_t) 0 : ((uint64_t) 1 << (64 / w)) - 1;
    return ~eq_mask_neon(o, n, w) & all;
}

/* True when the two 64-byte blocks differ anywhere. */
static inline int block_differs(const uint8x16_t *o, const uint8x16_t *n) {
    uint8x16_t d = vorrq_u8(vorrq_u8(veorq_u8(o[0], n[0]), veorq_u8(o[1], n[1])),
                            vorrq_u8(veorq_u8(o[2], n[2]), veorq_u8(o[3], n[3])));
    return vmaxvq_u32(vreinterpretq_u32_u8(d)) != 0;
}

static inline void load_block(const uint8_t *p, uint8x16_t *v) {
    v[0] = vld1q_u8(p);
    v[1] = vld1q_u8(p + 16);
    v[2] = vld1q_u8(p + 32);
    v[3] = vld1q_u8(p + 48);
}

int64_t diff_neon(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                  uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        uint8x16_t o[4], n[4];
        load_block(old + off, o);
        load_block(neu + off, n);
        if (!block_differs(o, n)) {
            continue;
        }
        k = emit_mask(old, neu, off, neq_mask_neon(o, n, w), w, base, positions, pw, values, xor_values, k);
        if (update) {
            vst1q_u8(old + off, n[0]);
            vst1q_u8(old + off + 16, n[1]);
            vst1q_u8(old + off + 32, n[2]);
            vst1q_u8(old + off + 48, n[3]);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, w, base, positions, pw, values, xor_values, update, k);
}

int64_t count_neon(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        uint8x16_t o[4], n[4];
        load_block(old + off, o);
        load_block(neu + off, n);
        if (block_differs(o, n)) {
            c += __builtin_popcountll(neq_mask_neon(o, n, w));
        }
    }
    return c + count_scalar(old + off, neu + off, bytes - off, w);
}

#endif
