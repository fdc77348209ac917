/*
 * XXH3-128 (seed 0), one-shot and streaming over a caller-owned state. The stripe accumulate and
 * scramble here are the scalar variants; xxh3_x86.c (AVX2, AVX-512) and xxh3_arm.c (NEON, SVE)
 * hold the SIMD ones, picked by cpu_features.c.
 */
#include "stitch_internal.h"
#include "xxh3_internal.h"

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

void xxh_accumulate_scalar(uint64_t *acc, const uint8_t *in, const uint8_t *secret, int64_t stripes) {
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

void xxh_scramble_scalar(uint64_t *acc, const uint8_t *secret) {
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= ld64(secret + 8 * i);
        acc[i] = a * P32_1;
    }
}

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
STITCH_EXPORT void stitch_xxh3_128(const uint8_t *in, int64_t len, uint64_t *out) {
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

STITCH_EXPORT void stitch_xxh3_stream_reset(uint64_t *st) {
    static const uint64_t init[8] = { P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1 };
    memset(st, 0, XS_WORDS * sizeof(uint64_t));
    memcpy(st, init, sizeof(init));
}

STITCH_EXPORT void stitch_xxh3_stream_update(uint64_t *st, const uint8_t *in, int64_t len) {
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
STITCH_EXPORT void stitch_xxh3_stream_digest(const uint64_t *st, uint64_t *out) {
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
