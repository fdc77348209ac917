/*
 * stitch delta kernels: the byte-level work of sparse weight sync, bound from Java through FFM
 * (dev.stitch.kernels.NativeKernels). The Java side checks every bound before calling, so these
 * functions trust their arguments except where a check is documented as part of the result.
 *
 * All multi-byte data is little-endian; x86-64 is little-endian, so plain unaligned loads are used.
 * The hot kernels have AVX-512 / AVX2 / scalar variants; one is chosen at load time from CPUID.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#define EXPORT __attribute__((visibility("default")))

typedef int64_t (*diff_fn)(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                           uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);
typedef int64_t (*count_fn)(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width);
typedef void (*xxh_acc_fn)(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes);
typedef void (*xxh_scr_fn)(uint64_t *acc, const uint8_t *secret);

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

/* ---- diff: scalar ------------------------------------------------------------------------ */

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

static int64_t diff_scalar(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
                           uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    int64_t k = 0;
    int64_t off = 0;
    /* Skip identical 32-byte blocks quickly; examine the others element by element. */
    for (; off + 32 <= bytes; off += 32) {
        uint64_t d = (ld64(old + off) ^ ld64(neu + off)) | (ld64(old + off + 8) ^ ld64(neu + off + 8))
                   | (ld64(old + off + 16) ^ ld64(neu + off + 16)) | (ld64(old + off + 24) ^ ld64(neu + off + 24));
        if (d) {
            k = diff_range_scalar(old, neu, off, off + 32, w, base, positions, pw, values, xor_values, update, k);
        }
    }
    return diff_range_scalar(old, neu, off, bytes, w, base, positions, pw, values, xor_values, update, k);
}

static int64_t count_scalar(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    for (int64_t off = 0; off < bytes; off += w) {
        c += ld_elem(old + off, w) != ld_elem(neu + off, w);
    }
    return c;
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
static int64_t diff_avx2(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
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
static int64_t count_avx2(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
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

#define AVX512 "avx512f,avx512bw,avx512vl,avx512dq,bmi,bmi2,popcnt"

__attribute__((target(AVX512)))
static inline uint64_t neq_mask_avx512(__m512i a, __m512i b, int32_t w) {
    switch (w) {
        case 1: return _mm512_cmpneq_epi8_mask(a, b);
        case 2: return _mm512_cmpneq_epi16_mask(a, b);
        case 4: return _mm512_cmpneq_epi32_mask(a, b);
        default: return _mm512_cmpneq_epi64_mask(a, b);
    }
}

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
static int64_t diff_avx512(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w, int64_t base,
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
static int64_t count_avx512(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t w) {
    int64_t c = 0;
    int64_t off = 0;
    for (; off + 64 <= bytes; off += 64) {
        __m512i a = _mm512_loadu_si512((const void *) (old + off));
        __m512i b = _mm512_loadu_si512((const void *) (neu + off));
        c += __builtin_popcountll(neq_mask_avx512(a, b, w));
    }
    return c + count_scalar(old + off, neu + off, bytes - off, w);
}

/* ---- xxh3 -------------------------------------------------------------------------------- */

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

typedef struct { uint64_t lo, hi; } u128;

static inline u128 mul128(uint64_t a, uint64_t b) {
    __uint128_t p = (__uint128_t) a * b;
    u128 r = { (uint64_t) p, (uint64_t) (p >> 64) };
    return r;
}

static inline uint64_t fold64(uint64_t a, uint64_t b) {
    u128 p = mul128(a, b);
    return p.lo ^ p.hi;
}

static inline uint64_t avalanche64(uint64_t h) {
    h ^= h >> 33; h *= P64_2; h ^= h >> 29; h *= P64_3; return h ^ (h >> 32);
}

static inline uint64_t avalanche3(uint64_t h) {
    h ^= h >> 37; h *= PMX1; return h ^ (h >> 32);
}

static inline uint64_t mix16(const uint8_t *in, const uint8_t *sec) {
    return fold64(ld64(in) ^ ld64(sec), ld64(in + 8) ^ ld64(sec + 8));
}

static inline void mix32(uint64_t *acc, const uint8_t *a, const uint8_t *b, const uint8_t *sec) {
    acc[0] += mix16(a, sec);
    acc[0] ^= ld64(b) + ld64(b + 8);
    acc[1] += mix16(b, sec + 16);
    acc[1] ^= ld64(a) + ld64(a + 8);
}

static u128 xxh3_short(const uint8_t *in, uint64_t len) {
    u128 r;
    if (len == 0) {
        r.lo = avalanche64(ld64(SECRET + 64) ^ ld64(SECRET + 72));
        r.hi = avalanche64(ld64(SECRET + 80) ^ ld64(SECRET + 88));
    } else if (len <= 3) {
        uint32_t c1 = in[0], c2 = in[len >> 1], c3 = in[len - 1];
        uint32_t cl = (c1 << 16) | (c2 << 24) | c3 | ((uint32_t) len << 8);
        uint32_t ch = __builtin_bswap32(cl);
        ch = (ch << 13) | (ch >> 19);
        uint64_t bl = (uint64_t) (ld32(SECRET) ^ ld32(SECRET + 4));
        uint64_t bh = (uint64_t) (ld32(SECRET + 8) ^ ld32(SECRET + 12));
        r.lo = avalanche64((uint64_t) cl ^ bl);
        r.hi = avalanche64((uint64_t) ch ^ bh);
    } else if (len <= 8) {
        uint64_t in64 = (uint64_t) ld32(in) + ((uint64_t) ld32(in + len - 4) << 32);
        uint64_t keyed = in64 ^ (ld64(SECRET + 16) ^ ld64(SECRET + 24));
        u128 m = mul128(keyed, P64_1 + (len << 2));
        m.hi += m.lo << 1;
        m.lo ^= m.hi >> 3;
        m.lo ^= m.lo >> 35;
        m.lo *= PMX2;
        m.lo ^= m.lo >> 28;
        r.lo = m.lo;
        r.hi = avalanche3(m.hi);
    } else {
        uint64_t bl = ld64(SECRET + 32) ^ ld64(SECRET + 40);
        uint64_t bh = ld64(SECRET + 48) ^ ld64(SECRET + 56);
        uint64_t ilo = ld64(in);
        uint64_t ihi = ld64(in + len - 8);
        u128 m = mul128(ilo ^ ihi ^ bl, P64_1);
        m.lo += (uint64_t) (len - 1) << 54;
        ihi ^= bh;
        m.hi += ihi + (uint64_t) (uint32_t) ihi * (P32_2 - 1);
        m.lo ^= __builtin_bswap64(m.hi);
        u128 h = mul128(m.lo, P64_2);
        h.hi += m.hi * P64_2;
        r.lo = avalanche3(h.lo);
        r.hi = avalanche3(h.hi);
    }
    return r;
}

static u128 xxh3_finish_mid(uint64_t *acc, uint64_t len) {
    u128 r;
    uint64_t lo = acc[0] + acc[1];
    uint64_t hi = acc[0] * P64_1 + acc[1] * P64_4 + len * P64_2;
    r.lo = avalanche3(lo);
    r.hi = 0 - avalanche3(hi);
    return r;
}

static u128 xxh3_mid(const uint8_t *in, uint64_t len) {
    uint64_t acc[2] = { len * P64_1, 0 };
    if (len <= 128) {
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    mix32(acc, in + 48, in + len - 64, SECRET + 96);
                }
                mix32(acc, in + 32, in + len - 48, SECRET + 64);
            }
            mix32(acc, in + 16, in + len - 32, SECRET + 32);
        }
        mix32(acc, in, in + len - 16, SECRET);
        return xxh3_finish_mid(acc, len);
    }
    unsigned rounds = (unsigned) (len / 32);
    for (unsigned i = 0; i < 4; i++) {
        mix32(acc, in + 32 * i, in + 32 * i + 16, SECRET + 32 * i);
    }
    acc[0] = avalanche3(acc[0]);
    acc[1] = avalanche3(acc[1]);
    for (unsigned i = 4; i < rounds; i++) {
        mix32(acc, in + 32 * i, in + 32 * i + 16, SECRET + 3 + 32 * (i - 4));
    }
    mix32(acc, in + len - 16, in + len - 32, SECRET + 136 - 17 - 16);
    return xxh3_finish_mid(acc, len);
}

static void xxh_accumulate_scalar(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    for (int64_t s = 0; s < stripes; s++) {
        const uint8_t *p = in + 64 * s;
        const uint8_t *k = secret + 8 * s;
        for (int i = 0; i < 8; i++) {
            uint64_t v = ld64(p + 8 * i);
            uint64_t x = v ^ ld64(k + 8 * i);
            acc[i ^ 1] += v;
            acc[i] += (x & 0xFFFFFFFFULL) * (x >> 32);
        }
    }
}

static void xxh_scramble_scalar(uint64_t *acc, const uint8_t *secret) {
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= ld64(secret + 8 * i);
        acc[i] = a * P32_1;
    }
}

__attribute__((target("avx2")))
static void xxh_accumulate_avx2(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
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
static void xxh_scramble_avx2(uint64_t *acc, const uint8_t *secret) {
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

/* Prefetches 512 bytes ahead: one stream from DRAM otherwise runs at about half the read bandwidth. */
__attribute__((target(AVX512_XXH)))
static void xxh_accumulate_avx512(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
    __m512i a = _mm512_loadu_si512((const void *) acc);
    for (int64_t s = 0; s < stripes; s++) {
        const uint8_t *p = in + 64 * s;
        _mm_prefetch((const char *) (p + 512), _MM_HINT_T0);
        a = xxh_stripe512(a, _mm512_loadu_si512((const void *) p), secret + 8 * s);
    }
    _mm512_storeu_si512((void *) acc, a);
}

__attribute__((target(AVX512_XXH)))
static void xxh_scramble_avx512(uint64_t *acc, const uint8_t *secret) {
    _mm512_storeu_si512((void *) acc, xxh_scramble512(_mm512_loadu_si512((const void *) acc), secret));
}

static xxh_acc_fn xxh_accumulate = xxh_accumulate_scalar;
static xxh_scr_fn xxh_scramble = xxh_scramble_scalar;

static uint64_t merge_accs(const uint64_t *acc, const uint8_t *sec, uint64_t start) {
    uint64_t r = start;
    for (int i = 0; i < 4; i++) {
        r += fold64(acc[2 * i] ^ ld64(sec + 16 * i), acc[2 * i + 1] ^ ld64(sec + 16 * i + 8));
    }
    return avalanche3(r);
}

static u128 xxh3_long(const uint8_t *in, uint64_t len) {
    uint64_t acc[8] = { P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1 };
    const uint64_t block = 1024;
    uint64_t blocks = (len - 1) / block;
    for (uint64_t n = 0; n < blocks; n++) {
        xxh_accumulate(acc, in + n * block, SECRET, 16);
        xxh_scramble(acc, SECRET + 192 - 64);
    }
    uint64_t stripes = ((len - 1) - block * blocks) / 64;
    xxh_accumulate(acc, in + blocks * block, SECRET, (int64_t) stripes);
    xxh_accumulate_scalar(acc, in + len - 64, SECRET + 192 - 64 - 7, 1);
    u128 r;
    r.lo = merge_accs(acc, SECRET + 11, len * P64_1);
    r.hi = merge_accs(acc, SECRET + 192 - 64 - 11, ~(len * P64_2));
    return r;
}

/* out[0] = low 64 bits, out[1] = high 64 bits of XXH3-128 (seed 0). */
EXPORT void stitch_xxh3_128(const uint8_t *in, int64_t len, uint64_t *out) {
    u128 r;
    uint64_t n = (uint64_t) len;
    if (n <= 16) {
        r = xxh3_short(in, n);
    } else if (n <= 240) {
        r = xxh3_mid(in, n);
    } else {
        r = xxh3_long(in, n);
    }
    out[0] = r.lo;
    out[1] = r.hi;
}

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
#define XS_WORDS 64

EXPORT void stitch_xxh3_stream_reset(uint64_t *st) {
    static const uint64_t init[8] = { P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1 };
    memset(st, 0, XS_WORDS * sizeof(uint64_t));
    memcpy(st, init, sizeof(init));
}

static void xs_consume(uint64_t *st, const uint8_t *in, uint64_t stripes) {
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

EXPORT void stitch_xxh3_stream_update(uint64_t *st, const uint8_t *in, int64_t len) {
    uint8_t *buf = (uint8_t *) (st + XS_BUF);
    uint8_t *last = (uint8_t *) (st + XS_LAST);
    uint64_t remaining = (uint64_t) len;
    st[XS_TOTAL] += remaining;
    while (remaining > 0) {
        uint64_t buffered = st[XS_BUFFERED];
        if (buffered == XS_BUFSIZE) {
            xs_consume(st, buf, XS_BUFSIZE / 64);
            memcpy(last, buf + XS_BUFSIZE - 64, 64);
            buffered = 0;
        }
        if (buffered == 0 && remaining > XS_BUFSIZE) {
            uint64_t stripes = (remaining - 1) / 64;
            xs_consume(st, in, stripes);
            memcpy(last, in + 64 * stripes - 64, 64);
            in += 64 * stripes;
            remaining -= 64 * stripes;
        }
        uint64_t take = XS_BUFSIZE - buffered;
        if (take > remaining) {
            take = remaining;
        }
        memcpy(buf + buffered, in, take);
        in += take;
        remaining -= take;
        st[XS_BUFFERED] = buffered + take;
    }
}

/* The digest of everything fed so far; the state is left unchanged. */
EXPORT void stitch_xxh3_stream_digest(const uint64_t *st, uint64_t *out) {
    uint64_t total = st[XS_TOTAL];
    uint64_t buffered = st[XS_BUFFERED];
    const uint8_t *buf = (const uint8_t *) (st + XS_BUF);
    const uint8_t *last = (const uint8_t *) (st + XS_LAST);
    if (total <= 240) {
        stitch_xxh3_128(buf, (int64_t) total, out);
        return;
    }
    uint64_t acc[8];
    memcpy(acc, st, sizeof(acc));
    uint64_t pos = st[XS_BLOCKPOS];
    uint64_t at = 0;
    while (buffered - at > 64) {
        xxh_accumulate(acc, buf + at, SECRET + 8 * pos, 1);
        at += 64;
        if (++pos == 16) {
            xxh_scramble(acc, SECRET + 192 - 64);
            pos = 0;
        }
    }
    uint8_t tail[64];
    const uint8_t *lp = buf + buffered - 64;
    if (buffered < 64) {
        memcpy(tail, last + buffered, 64 - buffered);
        memcpy(tail + 64 - buffered, buf, buffered);
        lp = tail;
    }
    xxh_accumulate_scalar(acc, lp, SECRET + 192 - 64 - 7, 1);
    out[0] = merge_accs(acc, SECRET + 11, total * P64_1);
    out[1] = merge_accs(acc, SECRET + 192 - 64 - 11, ~(total * P64_2));
}

/*
 * XXH3-128 of the bytes cur would hold after scattering (or XORing) count values at ascending
 * positions, without writing cur: each 16 KiB block is copied into L1, patched and hashed there,
 * so the tensor is read from memory once. A position below its block (not ascending) is ignored,
 * which can only produce a wrong digest, never a stray write.
 */
#define PATCH_BLOCK 16384
/* Returns count, or -(k+1) when position k is at or past the end (out is then not written). */
EXPORT int64_t stitch_patched_xxh3(const uint8_t *cur, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                   const uint8_t *values, int64_t count, int32_t xor_values, uint64_t *out) {
    uint64_t st[XS_WORDS];
    uint8_t buf[PATCH_BLOCK] __attribute__((aligned(64)));
    stitch_xxh3_stream_reset(st);
    int64_t k = 0;
    for (int64_t off = 0; off < bytes; off += PATCH_BLOCK) {
        int64_t n = bytes - off < PATCH_BLOCK ? bytes - off : PATCH_BLOCK;
        memcpy(buf, cur + off, (size_t) n);
        uint64_t first = (uint64_t) off / (uint64_t) w;
        uint64_t end = (uint64_t) (off + n) / (uint64_t) w;
        for (; k < count; k++) {
            uint64_t p = ld_pos(pos, pw, k);
            if (p >= end) {
                break;
            }
            if (p >= first) {
                uint8_t *d = buf + (p - first) * (uint64_t) w;
                uint64_t v = ld_elem(values + k * w, w);
                st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
            }
        }
        stitch_xxh3_stream_update(st, buf, n);
    }
    if (k < count) {
        return -(k + 1);
    }
    stitch_xxh3_stream_digest(st, out);
    return count;
}

/*
 * Fused apply and hash: scatters (or XORs) count values into dst at positions and returns the
 * XXH3-128 of dst's new bytes, hashing each 16 KiB block right after patching it, so dst is read
 * from memory once. Every element's old bytes are saved to undo[k] before it is written. Returns
 * count; or, when position k is at or past the end, puts dst back from undo and returns -(k+1).
 */
static void restore_undo(uint8_t *dst, int32_t w, const uint8_t *pos, int32_t pw, const uint8_t *undo, int64_t count) {
    /* newest first, so repeated or unordered positions still end at their original bytes */
    for (int64_t k = count - 1; k >= 0; k--) {
        st_elem(dst + ld_pos(pos, pw, k) * (uint64_t) w, w, ld_elem(undo + k * w, w));
    }
}

EXPORT int64_t stitch_scatter_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                   const uint8_t *values, int64_t count, int32_t xor_values, uint8_t *undo, uint64_t *out) {
    uint64_t st[XS_WORDS];
    stitch_xxh3_stream_reset(st);
    int64_t k = 0;
    for (int64_t off = 0; off < bytes; off += PATCH_BLOCK) {
        int64_t n = bytes - off < PATCH_BLOCK ? bytes - off : PATCH_BLOCK;
        uint64_t end = (uint64_t) (off + n) / (uint64_t) w;
        for (; k < count; k++) {
            uint64_t p = ld_pos(pos, pw, k);
            if (p >= end) {
                break;
            }
            uint8_t *d = dst + p * (uint64_t) w;
            uint64_t old = ld_elem(d, w);
            uint64_t v = ld_elem(values + k * w, w);
            st_elem(undo + k * w, w, old);
            st_elem(d, w, xor_values ? old ^ v : v);
        }
        stitch_xxh3_stream_update(st, dst + off, n);
    }
    if (k < count) {
        restore_undo(dst, w, pos, pw, undo, k);
        return -(k + 1);
    }
    stitch_xxh3_stream_digest(st, out);
    return count;
}

EXPORT void stitch_restore_undo(uint8_t *dst, int32_t w, const uint8_t *pos, int32_t pw, const uint8_t *undo, int64_t count) {
    restore_undo(dst, w, pos, pw, undo, count);
}

/*
 * As stitch_scatter_xxh3, with positions rebuilt from an escaped u16 gap stream the caller
 * validated with stitch_escaped_summary (so every position is inside dst and they strictly
 * ascend): a block is hashed once a position lands past it, while it is still in cache.
 */
EXPORT void stitch_scatter_escaped_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *units, int64_t unit_count,
                                        const uint8_t *values, int32_t xor_values, uint8_t *undo, uint64_t *out) {
    uint64_t st[XS_WORDS];
    stitch_xxh3_stream_reset(st);
    int64_t hashed = 0;
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (__builtin_expect(unit == 0xFFFF, 0)) {
            continue;
        }
        prev += gap + 1;
        gap = 0;
        int64_t at = prev * w;
        while (at >= hashed + PATCH_BLOCK) {
            stitch_xxh3_stream_update(st, dst + hashed, PATCH_BLOCK);
            hashed += PATCH_BLOCK;
        }
        uint8_t *d = dst + at;
        uint64_t old = ld_elem(d, w);
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(undo + k * w, w, old);
        st_elem(d, w, xor_values ? old ^ v : v);
        k++;
    }
    stitch_xxh3_stream_update(st, dst + hashed, bytes - hashed);
    stitch_xxh3_stream_digest(st, out);
}

/* ---- streaming primitives (memory-traffic floor) ----------------------------------------- */

/* Reads every byte (the streaming read bandwidth B_r); returns an XOR so nothing is optimised away. */
__attribute__((target("avx2")))
static uint64_t read_avx2(const uint8_t *p, int64_t bytes) {
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

static uint64_t read_scalar(const uint8_t *p, int64_t bytes) {
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

/* ---- dispatch ---------------------------------------------------------------------------- */

static diff_fn diff_impl = diff_scalar;
static count_fn count_impl = count_scalar;
static uint64_t (*read_impl)(const uint8_t *, int64_t) = read_scalar;
static const char *isa_name = "scalar";
static int fused_diff_hash = 0;

/* Picks the best variants the CPU supports, up to max_level (0 scalar, 1 AVX2, 2 AVX-512). */
static void select_isa(int32_t max_level) {
    __builtin_cpu_init();
    diff_impl = diff_scalar;
    count_impl = count_scalar;
    read_impl = read_scalar;
    xxh_accumulate = xxh_accumulate_scalar;
    xxh_scramble = xxh_scramble_scalar;
    isa_name = "scalar";
    fused_diff_hash = 0;
    if (max_level >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) {
        diff_impl = diff_avx2;
        count_impl = count_avx2;
        read_impl = read_avx2;
        xxh_accumulate = xxh_accumulate_avx2;
        xxh_scramble = xxh_scramble_avx2;
        isa_name = "avx2";
    }
    if (max_level >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2")) {
        diff_impl = diff_avx512;
        count_impl = count_avx512;
        xxh_accumulate = xxh_accumulate_avx512;
        xxh_scramble = xxh_scramble_avx512;
        fused_diff_hash = 1;
        isa_name = "avx512";
    }
}

__attribute__((constructor))
static void stitch_select_isa(void) {
    select_isa(2);
}

/* Restricts dispatch to at most max_level (for tests and -Dstitch.native.isa); returns the ISA now in use. */
/*
 * The bf16 diff with the XXH3 accumulate of each new 64-byte line done on the register the compare
 * already loaded: the diff waits on memory, so the hash's arithmetic runs in its shadow instead of
 * re-reading the bytes. acc/pos are the stream's accumulators and stripe position in its block.
 */
__attribute__((target(AVX512), always_inline))
static inline int64_t diff_w2_hash_loop(uint8_t *old, const uint8_t *neu, int64_t bytes, int64_t base, uint8_t *positions,
                                        uint8_t *values, int32_t xor_values, int32_t update, __m512i *acc, uint64_t *pos) {
    int64_t k = 0;
    __m512i a = *acc;
    uint64_t p = *pos;
    for (int64_t off = 0; off < bytes; off += 64) {
        k = diff_avx512_w2_line(old, neu, off, base, positions, 4, values, xor_values, update, k);
        a = xxh_stripe512(a, _mm512_loadu_si512((const void *) (neu + off)), SECRET + 8 * p);
        if (++p == 16) {
            a = xxh_scramble512(a, SECRET + 192 - 64);
            p = 0;
        }
    }
    *acc = a;
    *pos = p;
    return k;
}

__attribute__((target(AVX512)))
static int64_t diff_w2_hash(uint8_t *old, const uint8_t *neu, int64_t bytes, int64_t base, uint8_t *positions,
                            uint8_t *values, int32_t xor_values, int32_t update, uint64_t *st) {
    __m512i acc = _mm512_loadu_si512((const void *) st);
    uint64_t pos = st[XS_BLOCKPOS];
    int64_t k;
    /* constant flags per call let the compiler drop the untaken variants from the loop */
    if (xor_values && !update) {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, 1, 0, &acc, &pos);
    } else if (!xor_values && !update) {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, 0, 0, &acc, &pos);
    } else {
        k = diff_w2_hash_loop(old, neu, bytes, base, positions, values, xor_values, update, &acc, &pos);
    }
    _mm512_storeu_si512((void *) st, acc);
    st[XS_BLOCKPOS] = pos;
    return k;
}

/*
 * stitch_diff_gather that also feeds the new bytes into a streaming XXH3-128 state (see
 * stitch_xxh3_stream_update). The fused path needs bf16 with 4-byte positions, whole 64-byte
 * lines and a stream holding whole stripes back (what feeding 64-byte multiples leaves); it then
 * consumes the held-back stripes, hashes every line but the last as it diffs it, and holds that
 * last line back in turn. Anything else is a diff followed by an update.
 */
EXPORT int64_t stitch_diff_gather_xxh3(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                       uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values,
                                       int32_t update, uint64_t *st) {
    uint64_t buffered = st[XS_BUFFERED];
    /* below 241 bytes in all, the digest is a one-shot hash of the buffer, so nothing may be consumed */
    if (!fused_diff_hash || width != 2 || pw != 4 || bytes < 128 || bytes % 64 != 0 || buffered % 64 != 0
        || st[XS_TOTAL] + (uint64_t) bytes <= 240) {
        int64_t k = diff_impl(old, neu, bytes, width, base, positions, pw, values, xor_values, update);
        stitch_xxh3_stream_update(st, neu, bytes);
        return k;
    }
    uint8_t *buf = (uint8_t *) (st + XS_BUF);
    uint8_t *last = (uint8_t *) (st + XS_LAST);
    if (buffered > 0) {
        xs_consume(st, buf, buffered / 64);
    }
    int64_t body = bytes - 64;
    int64_t k = diff_w2_hash(old, neu, body, base, positions, values, xor_values, update, st);
    k += diff_impl(old + body, neu + body, 64, 2, base + body / 2, positions + 4 * k, 4, values + 2 * k, xor_values, update);
    memcpy(last, neu + body - 64, 64);
    memcpy(buf, neu + body, 64);
    st[XS_BUFFERED] = 64;
    st[XS_TOTAL] += (uint64_t) bytes;
    return k;
}

EXPORT const char *stitch_cap_isa(int32_t max_level) {
    select_isa(max_level);
    return isa_name;
}

EXPORT const char *stitch_isa(void) {
    return isa_name;
}

/* ---- exported kernels -------------------------------------------------------------------- */

EXPORT int64_t stitch_count_changed(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width) {
    return count_impl(old, neu, bytes, width);
}

EXPORT int64_t stitch_diff_gather(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                  uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update) {
    return diff_impl(old, neu, bytes, width, base, positions, pw, values, xor_values, update);
}

EXPORT uint64_t stitch_read_stream(const uint8_t *p, int64_t bytes) {
    return read_impl(p, bytes);
}

EXPORT void stitch_fill_stream(uint8_t *p, int64_t bytes, int32_t value) {
    memset(p, value, (size_t) bytes);
}

static inline int is_nan(uint64_t b, int32_t kind) {
    switch (kind) {
        case 1: return (b & 0x7FFF) > 0x7F80;
        case 2: return (b & 0x7FFF) > 0x7C00;
        case 3: return (b & 0x7FFFFFFFULL) > 0x7F800000ULL;
        case 4: return (b & 0x7FFFFFFFFFFFFFFFULL) > 0x7FF0000000000000ULL;
        case 5: return (b & 0x7F) == 0x7F;
        case 6: return (b & 0x7F) > 0x7C;
        case 7: return (b & 0xFF) == 0xFF;
        default: return 0;
    }
}

static inline int32_t kind_width(int32_t kind) {
    switch (kind) {
        case 1: case 2: return 2;
        case 3: return 4;
        case 4: return 8;
        default: return 1;
    }
}

EXPORT int32_t stitch_contains_nan(const uint8_t *values, int64_t count, int32_t kind) {
    int32_t w = kind_width(kind);
    int found = 0;
    /* Branch-free accumulation over blocks lets the compiler vectorise the common (no NaN) case. */
    int64_t i = 0;
    for (; i + 256 <= count && !found; i += 256) {
        int acc = 0;
        for (int64_t j = i; j < i + 256; j++) {
            acc |= is_nan(ld_elem(values + j * w, w), kind);
        }
        found = acc;
    }
    for (; i < count && !found; i++) {
        found = is_nan(ld_elem(values + i * w, w), kind);
    }
    return found;
}

EXPORT int64_t stitch_max_gap(const uint8_t *pos, int32_t pw, int64_t count) {
    uint64_t prev = (uint64_t) -1;
    uint64_t max = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        uint64_t g = p - prev - 1;
        max = g > max ? g : max;
        prev = p;
    }
    return (int64_t) max;
}

EXPORT void stitch_encode_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *gaps, int32_t gw) {
    uint64_t prev = (uint64_t) -1;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        st_elem(gaps + k * gw, gw, p - prev - 1);
        prev = p;
    }
}

EXPORT void stitch_decode_gaps(const uint8_t *gaps, int32_t gw, int64_t count, uint8_t *pos, int32_t pw) {
    uint64_t prev = (uint64_t) -1;
    for (int64_t k = 0; k < count; k++) {
        prev += ld_elem(gaps + k * gw, gw) + 1;
        st_pos(pos, pw, k, prev);
    }
}

EXPORT int64_t stitch_escaped_gap_units(const uint8_t *pos, int32_t pw, int64_t count) {
    uint64_t prev = (uint64_t) -1;
    int64_t units = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        units += (int64_t) ((p - prev - 1) / 65535) + 1;
        prev = p;
    }
    return units;
}

/* Returns the units written, or -1 when they would not fit in capacity units (then the output is partial). */
/* Gaps count from index first (g[0] = pos[0] - first), so a stream can be built in pieces. */
EXPORT int64_t stitch_encode_escaped_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *units, int64_t capacity,
                                          int64_t first) {
    uint64_t prev = (uint64_t) first - 1;
    int64_t u = 0;
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = pw == 4 ? (uint64_t) ld32(pos + 4 * k) : ld64(pos + 8 * k);
        uint64_t g = p - prev - 1;
        prev = p;
        if (__builtin_expect(g < 65535 && u < capacity, 1)) {
            st16(units + 2 * u++, (uint16_t) g);
            continue;
        }
        if ((uint64_t) (capacity - u) < g / 65535 + 1) {
            return -1;
        }
        for (uint64_t e = g / 65535; e > 0; e--) {
            st16(units + 2 * u++, 0xFFFF);
        }
        st16(units + 2 * u++, (uint16_t) (g % 65535));
    }
    return u;
}

/* Returns the positions decoded, or -1 (ends inside an escape), -2 (more than max_count), -3 (position >= limit, in detail[0]). */
static int64_t decode_escaped_checked(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                      int64_t max_count, int64_t limit, int64_t *detail);

EXPORT int64_t stitch_decode_escaped_gaps(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                          int64_t max_count, int64_t limit, int64_t *detail) {
    if (pw == 4 && limit <= (int64_t) 1 << 32) {
        /* Positions strictly ascend, so only the last can be out of range: the loop checks it once at
           the end, and any failure is decoded again by the checked loop to report it exactly. */
        int64_t prev = -1;
        int64_t gap = 0;
        int64_t k = 0;
        int bad = 0;
        for (int64_t u = 0; u < unit_count; u++) {
            uint32_t unit = ld16(units + 2 * u);
            gap += unit;
            if (__builtin_expect(unit == 0xFFFF, 0)) {
                continue;
            }
            if (__builtin_expect(k >= max_count, 0)) {
                bad = 1;
                break;
            }
            prev += gap + 1;
            gap = 0;
            st32(pos + 4 * k++, (uint32_t) prev);
        }
        if (!bad && gap == 0 && prev < limit) {
            return k;
        }
    }
    return decode_escaped_checked(units, unit_count, pos, pw, max_count, limit, detail);
}

static int64_t decode_escaped_checked(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                      int64_t max_count, int64_t limit, int64_t *detail) {
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (unit == 0xFFFF) {
            continue;
        }
        int64_t p = prev + gap + 1;
        if (k >= max_count) {
            return -2;
        }
        if (p >= limit || p < 0) {
            detail[0] = p;
            return -3;
        }
        st_pos(pos, pw, k++, (uint64_t) p);
        prev = p;
        gap = 0;
    }
    return gap != 0 ? -1 : k;
}

/* out[0] = sum of all unit values, out[1] = number of units that are not escapes. */
EXPORT void stitch_escaped_summary(const uint8_t *units, int64_t unit_count, int64_t *out) {
    uint64_t sum = 0;
    uint64_t ends = 0;
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        sum += unit;
        ends += unit != 0xFFFF;
    }
    out[0] = (int64_t) sum;
    out[1] = (int64_t) ends;
}

/* Byte-plane split and merge. bf16/f16 (w == 2) and f32 (w == 4) use SSE2, part of every x86-64, so
   they need no dispatch; the plain loops cover the other widths. */
EXPORT void stitch_split_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
    int64_t i = 0;
    if (w == 2) {
        const __m128i low = _mm_set1_epi16(0x00FF);
        for (; i + 16 <= count; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *) (src + 2 * i));
            __m128i b = _mm_loadu_si128((const __m128i *) (src + 2 * i + 16));
            __m128i even = _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
            __m128i odd = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
            _mm_storeu_si128((__m128i *) (dst + i), even);
            _mm_storeu_si128((__m128i *) (dst + count + i), odd);
        }
        for (; i < count; i++) {
            dst[i] = src[2 * i];
            dst[count + i] = src[2 * i + 1];
        }
        return;
    }
    for (; i < count; i++) {
        for (int32_t b = 0; b < w; b++) {
            dst[b * count + i] = src[i * w + b];
        }
    }
}

EXPORT void stitch_merge_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
    int64_t i = 0;
    if (w == 2) {
        for (; i + 16 <= count; i += 16) {
            __m128i lo = _mm_loadu_si128((const __m128i *) (src + i));
            __m128i hi = _mm_loadu_si128((const __m128i *) (src + count + i));
            _mm_storeu_si128((__m128i *) (dst + 2 * i), _mm_unpacklo_epi8(lo, hi));
            _mm_storeu_si128((__m128i *) (dst + 2 * i + 16), _mm_unpackhi_epi8(lo, hi));
        }
        for (; i < count; i++) {
            dst[2 * i] = src[i];
            dst[2 * i + 1] = src[count + i];
        }
        return;
    }
    if (w == 4) {
        for (; i + 16 <= count; i += 16) {
            __m128i p0 = _mm_loadu_si128((const __m128i *) (src + i));
            __m128i p1 = _mm_loadu_si128((const __m128i *) (src + count + i));
            __m128i p2 = _mm_loadu_si128((const __m128i *) (src + 2 * count + i));
            __m128i p3 = _mm_loadu_si128((const __m128i *) (src + 3 * count + i));
            __m128i l01 = _mm_unpacklo_epi8(p0, p1), h01 = _mm_unpackhi_epi8(p0, p1);
            __m128i l23 = _mm_unpacklo_epi8(p2, p3), h23 = _mm_unpackhi_epi8(p2, p3);
            _mm_storeu_si128((__m128i *) (dst + 4 * i), _mm_unpacklo_epi16(l01, l23));
            _mm_storeu_si128((__m128i *) (dst + 4 * i + 16), _mm_unpackhi_epi16(l01, l23));
            _mm_storeu_si128((__m128i *) (dst + 4 * i + 32), _mm_unpacklo_epi16(h01, h23));
            _mm_storeu_si128((__m128i *) (dst + 4 * i + 48), _mm_unpackhi_epi16(h01, h23));
        }
    }
    for (; i < count; i++) {
        for (int32_t b = 0; b < w; b++) {
            dst[i * w + b] = src[b * count + i];
        }
    }
}

/* Returns count, or -(k+1) when position k is not below limit (elements before it are written). */
EXPORT int64_t stitch_scatter(uint8_t *dst, int64_t limit, int32_t w, const uint8_t *pos, int32_t pw,
                              const uint8_t *values, int64_t count, int32_t xor_values) {
    for (int64_t k = 0; k < count; k++) {
        uint64_t p = ld_pos(pos, pw, k);
        if (p >= (uint64_t) limit) {
            return -(k + 1);
        }
        uint8_t *d = dst + p * (uint64_t) w;
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
    }
    return count;
}

/* Applies a stream the caller validated with stitch_escaped_summary. */
EXPORT int64_t stitch_scatter_escaped(uint8_t *dst, int32_t w, const uint8_t *units, int64_t unit_count,
                                      const uint8_t *values, int32_t xor_values) {
    int64_t prev = -1;
    int64_t gap = 0;
    int64_t k = 0;
    if (w == 2 && !xor_values) {
        for (int64_t u = 0; u < unit_count; u++) {
            uint32_t unit = ld16(units + 2 * u);
            gap += unit;
            if (__builtin_expect(unit == 0xFFFF, 0)) {
                continue;
            }
            prev += gap + 1;
            gap = 0;
            st16(dst + 2 * prev, ld16(values + 2 * k));
            k++;
        }
        return k;
    }
    for (int64_t u = 0; u < unit_count; u++) {
        uint32_t unit = ld16(units + 2 * u);
        gap += unit;
        if (unit == 0xFFFF) {
            continue;
        }
        prev += gap + 1;
        gap = 0;
        uint8_t *d = dst + prev * w;
        uint64_t v = ld_elem(values + k * w, w);
        st_elem(d, w, xor_values ? ld_elem(d, w) ^ v : v);
        k++;
    }
    return k;
}

EXPORT void stitch_xor_into(uint8_t *dst, const uint8_t *payload, int64_t bytes) {
    int64_t off = 0;
    for (; off + 8 <= bytes; off += 8) {
        st64(dst + off, ld64(dst + off) ^ ld64(payload + off));
    }
    for (; off < bytes; off++) {
        dst[off] ^= payload[off];
    }
}

/* Validates every offset first, so a bad one writes nothing; returns count or -(k+1). */
EXPORT int64_t stitch_overwrite_bytes(uint8_t *dst, int64_t dst_bytes, const uint8_t *offsets, const uint8_t *bytes, int64_t count) {
    for (int64_t k = 0; k < count; k++) {
        if ((int64_t) ld32(offsets + 4 * k) >= dst_bytes) {
            return -(k + 1);
        }
    }
    for (int64_t k = 0; k < count; k++) {
        dst[ld32(offsets + 4 * k)] = bytes[k];
    }
    return count;
}

EXPORT int64_t stitch_xor_bytes(const uint8_t *data, int64_t bytes) {
    uint64_t x = 0;
    int64_t off = 0;
    for (; off + 8 <= bytes; off += 8) {
        x ^= ld64(data + off);
    }
    for (; off < bytes; off++) {
        x ^= data[off];
    }
    x ^= x >> 32;
    x ^= x >> 16;
    x ^= x >> 8;
    return (int64_t) (x & 0xFF);
}

/* binary32 bits to binary64 bits; NaNs keep their payload and gain the quiet bit (x86 behaviour). */
static inline uint64_t widen_f32(uint32_t b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
        return ((uint64_t) (b >> 31) << 63) | 0x7FF8000000000000ULL | ((uint64_t) (b & 0x7FFFFF) << 29);
    }
    float f;
    memcpy(&f, &b, 4);
    double d = (double) f;
    uint64_t r;
    memcpy(&r, &d, 8);
    return r;
}

static inline uint64_t widen_f16(uint32_t b) {
    uint64_t sign = (uint64_t) (b >> 15) << 63;
    uint32_t e = (b >> 10) & 0x1F;
    uint64_t m = b & 0x3FF;
    if (e == 0x1F) {
        return m ? (sign | 0x7FF8000000000000ULL | (m << 42)) : (sign | 0x7FF0000000000000ULL);
    }
    if (e == 0) {
        if (m == 0) {
            return sign;
        }
        /* Subnormal: normalise the mantissa; value = m * 2^-24. */
        int shift = __builtin_clzll(m) - 53; /* bring the leading 1 to bit 10 */
        m <<= shift;
        int64_t exp = -14 - shift + 1023;
        return sign | ((uint64_t) exp << 52) | ((m & 0x3FF) << 42);
    }
    return sign | ((uint64_t) (e - 15 + 1023) << 52) | (m << 42);
}

EXPORT int64_t stitch_xor_widened(const uint8_t *values, int64_t count, int32_t kind) {
    uint64_t x = 0;
    if (kind == 1) {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f32((uint32_t) ld16(values + 2 * i) << 16);
        }
    } else if (kind == 2) {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f16(ld16(values + 2 * i));
        }
    } else {
        for (int64_t i = 0; i < count; i++) {
            x ^= widen_f32(ld32(values + 4 * i));
        }
    }
    return (int64_t) x;
}

/*
 * A zstd external sequence producer (ZSTD_sequenceProducer_F, zstd >= 1.5.4) that reports the whole
 * block as literals. Registered on a compression context it turns zstd into a Huffman-only coder:
 * on byte planes whose bytes are skewed but never repeat in runs (the low bytes of gaps and of
 * value XORs), level 1's match search finds only short, costly matches, and skipping it is both
 * about three times faster and a little smaller. The layout mirrors ZSTD_Sequence.
 */
typedef struct {
    unsigned int offset;
    unsigned int lit_length;
    unsigned int match_length;
    unsigned int rep;
} stitch_zstd_sequence;

EXPORT size_t stitch_zstd_literals_only(void *state, stitch_zstd_sequence *out, size_t capacity, const void *src,
                                        size_t src_size, const void *dict, size_t dict_size, int level, size_t window) {
    (void) state; (void) src; (void) dict; (void) dict_size; (void) level; (void) window;
    if (capacity < 1 || src_size > 0xFFFFFFFFu) {
        return (size_t) -1; /* ZSTD_SEQUENCE_PRODUCER_ERROR */
    }
    out[0].offset = 0;
    out[0].lit_length = (unsigned int) src_size;
    out[0].match_length = 0;
    out[0].rep = 0;
    return 1;
}
