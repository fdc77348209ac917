/*
 * Internal to the stitch kernels library, never exported: unaligned little-endian loads and stores,
 * element and position access, the target() strings of the SIMD variants, and the run-time dispatch
 * table that cpu_features.c fills and the kernels call through. The library builds for x86-64
 * (SSE2 baseline, AVX2 and AVX-512 variants) and aarch64 (NEON baseline, SVE variants); other
 * targets get the scalar kernels only (docs/platforms.md).
 */
#ifndef STITCH_INTERNAL_H
#define STITCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "stitch_kernels.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the stitch kernels read the formats' little-endian data with native loads"
#endif

/* Both targets are little-endian, so plain unaligned loads are the little-endian reads the formats need. */
static inline uint16_t ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void st16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline uint64_t ld_elem(const uint8_t *p, int32_t w) {
    switch (w) {
        case 1: return p[0];
        case 2: return ld16(p);
        case 4: return ld32(p);
        default: return ld64(p);
    }
}

static inline void st_elem(uint8_t *p, int32_t w, uint64_t v) {
    switch (w) {
        case 1: p[0] = (uint8_t) v; break;
        case 2: st16(p, (uint16_t) v); break;
        case 4: st32(p, (uint32_t) v); break;
        default: st64(p, v); break;
    }
}

static inline uint64_t ld_pos(const uint8_t *p, int32_t pw, int64_t k) {
    return pw == 4 ? (uint64_t) ld32(p + 4 * k) : ld64(p + 8 * k);
}

static inline void st_pos(uint8_t *p, int32_t pw, int64_t k, uint64_t v) {
    if (pw == 4) {
        st32(p + 4 * k, (uint32_t) v);
    } else {
        st64(p + 8 * k, v);
    }
}

#if defined(__x86_64__)
/* The target() of the AVX-512 diff kernels, shared by the plain and the hash-fused diff. */
#define AVX512 "avx512f,avx512bw,avx512vl,avx512dq,bmi,bmi2,popcnt"
#endif

/* ---- dispatch table (cpu_features.c) ---------------------------------------------------- */

typedef int64_t (*diff_fn)(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                           uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
typedef int64_t (*count_fn)(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width);
typedef void (*xxh_acc_fn)(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
typedef void (*xxh_scr_fn)(uint64_t *acc, const uint8_t *secret);
typedef uint64_t (*read_fn)(const uint8_t *p, int64_t bytes);

#pragma GCC visibility push(hidden)

/* The variants in use, picked from CPUID (x86-64) or the auxiliary vector (aarch64) at load time and capped by stitch_cap_isa. */
extern diff_fn diff_impl;
extern count_fn count_impl;
extern read_fn read_impl;
extern xxh_acc_fn xxh_accumulate;
extern xxh_scr_fn xxh_scramble;
/* Whether stitch_diff_gather_xxh3 may take its AVX-512 fused path (else it fuses block by block, diff_xxh3.c). */
extern int fused_diff_hash;

/* The portable variants (diff.c, xxh3.c, memory_traffic.c). */
int64_t diff_scalar(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                    uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
int64_t count_scalar(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w);
void xxh_accumulate_scalar(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
void xxh_scramble_scalar(uint64_t *acc, const uint8_t *secret);
uint64_t read_scalar(const uint8_t *p, int64_t bytes);

#if defined(__x86_64__)
/* x86-64 variants (diff_x86.c, xxh3_x86.c, memory_traffic.c). */
int64_t diff_avx2(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                  uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
int64_t diff_avx512(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                    uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
int64_t count_avx2(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w);
int64_t count_avx512(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w);
void xxh_accumulate_avx2(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
void xxh_accumulate_avx512(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
void xxh_scramble_avx2(uint64_t *acc, const uint8_t *secret);
void xxh_scramble_avx512(uint64_t *acc, const uint8_t *secret);
uint64_t read_avx2(const uint8_t *p, int64_t bytes);
#elif defined(__aarch64__)
/* aarch64 variants (diff_neon.c, diff_sve.c, xxh3_arm.c, memory_traffic.c). */
int64_t diff_neon(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                  uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
int64_t diff_sve(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                 uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
int64_t count_neon(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w);
int64_t count_sve(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w);
void xxh_accumulate_neon(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
void xxh_accumulate_sve(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
void xxh_scramble_neon(uint64_t *acc, const uint8_t *secret);
uint64_t read_neon(const uint8_t *p, int64_t bytes);
/* Bytes in one SVE vector (svcntb), for the dispatch rule in cpu_features.c. */
int64_t sve_vector_bytes(void);
#endif

#pragma GCC visibility pop

#endif
