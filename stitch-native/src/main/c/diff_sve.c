/*
 * The aarch64 SVE diff kernels, vector-length agnostic. Elements are loaded zero-extended into 32-
 * or 64-bit lanes, so one COMPACT packs the changed values and one their indices, and predicated
 * (truncating) stores write exactly the changed slots: no per-element branch and no write past the
 * last change. cpu_features.c picks them on SVE CPUs whose vectors are wider than NEON's
 * (docs/platforms.md).
 */
#include "stitch_internal.h"

#if defined(__aarch64__)

#include <arm_sve.h>

#define SVE_TARGET __attribute__((target("+sve")))

/* Bytes in one SVE vector; only called once HWCAP_SVE is known to be set. */
SVE_TARGET int64_t sve_vector_bytes(void) {
    return (int64_t) svcntb();
}

/* Element i (of w bytes) of p, zero-extended into the 32-bit lanes of pg. */
SVE_TARGET static inline svuint32_t load32(svbool_t pg, const uint8_t *p, int32_t w, int64_t i) {
    switch (w) {
        case 1: return svld1ub_u32(pg, p + i);
        case 2: return svld1uh_u32(pg, (const uint16_t *) (const void *) p + i);
        default: return svld1_u32(pg, (const uint32_t *) (const void *) p + i);
    }
}

/* Stores the low w bytes of each active 32-bit lane at element i of p. */
SVE_TARGET static inline void store32(svbool_t pg, uint8_t *p, int32_t w, int64_t i, svuint32_t v) {
    switch (w) {
        case 1: svst1b_u32(pg, p + i, v); break;
        case 2: svst1h_u32(pg, (uint16_t *) (void *) p + i, v); break;
        default: svst1_u32(pg, (uint32_t *) (void *) p + i, v); break;
    }
}

SVE_TARGET static inline svuint64_t load64(svbool_t pg, const uint8_t *p, int32_t w, int64_t i) {
    switch (w) {
        case 1: return svld1ub_u64(pg, p + i);
        case 2: return svld1uh_u64(pg, (const uint16_t *) (const void *) p + i);
        case 4: return svld1uw_u64(pg, (const uint32_t *) (const void *) p + i);
        default: return svld1_u64(pg, (const uint64_t *) (const void *) p + i);
    }
}

SVE_TARGET static inline void store64(svbool_t pg, uint8_t *p, int32_t w, int64_t i, svuint64_t v) {
    switch (w) {
        case 1: svst1b_u64(pg, p + i, v); break;
        case 2: svst1h_u64(pg, (uint16_t *) (void *) p + i, v); break;
        case 4: svst1w_u64(pg, (uint32_t *) (void *) p + i, v); break;
        default: svst1_u64(pg, (uint64_t *) (void *) p + i, v); break;
    }
}

/* Elements of 1, 2 or 4 bytes with 4-byte positions: 32-bit lanes (indices fit, the caller checked base + n). */
SVE_TARGET static int64_t diff_sve32(uint8_t *old, const uint8_t *neu, int64_t n, int32_t w, int64_t base,
                                     uint8_t *positions, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t step = (int64_t) svcntw();
    for (int64_t i = 0; i < n; i += step) {
        svbool_t pg = svwhilelt_b32_s64(i, n);
        svuint32_t o = load32(pg, old, w, i);
        svuint32_t nv = load32(pg, neu, w, i);
        svbool_t ne = svcmpne_u32(pg, o, nv);
        if (!svptest_any(pg, ne)) {
            continue;
        }
        int64_t c = (int64_t) svcntp_b32(pg, ne);
        svbool_t out = svwhilelt_b32_s64(0, c);
        svuint32_t v = xor_values ? sveor_u32_x(pg, o, nv) : nv;
        store32(out, values, w, k, svcompact_u32(ne, v));
        svuint32_t idx = svindex_u32((uint32_t) (base + i), 1);
        svst1_u32(out, (uint32_t *) (void *) positions + k, svcompact_u32(ne, idx));
        if (update) {
            store32(ne, old, w, i, nv);
        }
        k += c;
    }
    return k;
}

/* 8-byte elements or 8-byte positions: 64-bit lanes. */
SVE_TARGET static int64_t diff_sve64(uint8_t *old, const uint8_t *neu, int64_t n, int32_t w, int64_t base,
                                     uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t step = (int64_t) svcntd();
    for (int64_t i = 0; i < n; i += step) {
        svbool_t pg = svwhilelt_b64_s64(i, n);
        svuint64_t o = load64(pg, old, w, i);
        svuint64_t nv = load64(pg, neu, w, i);
        svbool_t ne = svcmpne_u64(pg, o, nv);
        if (!svptest_any(pg, ne)) {
            continue;
        }
        int64_t c = (int64_t) svcntp_b64(pg, ne);
        svbool_t out = svwhilelt_b64_s64(0, c);
        svuint64_t v = xor_values ? sveor_u64_x(pg, o, nv) : nv;
        store64(out, values, w, k, svcompact_u64(ne, v));
        svuint64_t idx = svcompact_u64(ne, svindex_u64((uint64_t) (base + i), 1));
        if (pw == 4) {
            svst1w_u64(out, (uint32_t *) (void *) positions + k, idx);
        } else {
            svst1_u64(out, (uint64_t *) (void *) positions + k, idx);
        }
        if (update) {
            store64(ne, old, w, i, nv);
        }
        k += c;
    }
    return k;
}

int64_t diff_sve(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                 uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t n = bytes / w;
    if (w <= 4 && pw == 4) {
        return diff_sve32(old, neu, n, w, base, positions, values, xor_values, update);
    }
    return diff_sve64(old, neu, n, w, base, positions, pw, values, xor_values, update);
}

/* Counts with lanes of the element's own width, so one compare covers a whole vector of elements. */
SVE_TARGET int64_t count_sve(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    int64_t n = bytes / w;
    switch (w) {
        case 1:
            for (int64_t i = 0; i < n; i += (int64_t) svcntb()) {
                svbool_t pg = svwhilelt_b8_s64(i, n);
                c += (int64_t) svcntp_b8(pg, svcmpne_u8(pg, svld1_u8(pg, old + i), svld1_u8(pg, neu + i)));
            }
            break;
        case 2:
            for (int64_t i = 0; i < n; i += (int64_t) svcnth()) {
                svbool_t pg = svwhilelt_b16_s64(i, n);
                c += (int64_t) svcntp_b16(pg, svcmpne_u16(pg, svld1_u16(pg, (const uint16_t *) (const void *) old + i),
                                                          svld1_u16(pg, (const uint16_t *) (const void *) neu + i)));
            }
            break;
        case 4:
            for (int64_t i = 0; i < n; i += (int64_t) svcntw()) {
                svbool_t pg = svwhilelt_b32_s64(i, n);
                c += (int64_t) svcntp_b32(pg, svcmpne_u32(pg, svld1_u32(pg, (const uint32_t *) (const void *) old + i),
                                                          svld1_u32(pg, (const uint32_t *) (const void *) neu + i)));
            }
            break;
        default:
            for (int64_t i = 0; i < n; i += (int64_t) svcntd()) {
                svbool_t pg = svwhilelt_b64_s64(i, n);
                c += (int64_t) svcntp_b64(pg, svcmpne_u64(pg, svld1_u64(pg, (const uint64_t *) (const void *) old + i),
                                                          svld1_u64(pg, (const uint64_t *) (const void *) neu + i)));
            }
            break;
    }
    return c;
}

#endif
