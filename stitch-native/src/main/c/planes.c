/*
 * Byte-plane split and merge of fixed-width values, so each byte position compresses on its own.
 * bf16/f16 (w == 2) and f32 (w == 4) take the baseline vector unit of each target, SSE2 on x86-64
 * and NEON on aarch64 (both part of every CPU of the target, so no dispatch); the plain loops
 * cover the other widths and the tails.
 */
#include "stitch_internal.h"

static void split_tail(const uint8_t *restrict src, int32_t w, int64_t from, int64_t count, uint8_t *restrict dst) {
    for (int64_t i = from; i < count; i++) {
        for (int32_t b = 0; b < w; b++) {
            dst[b * count + i] = src[i * w + b];
        }
    }
}

static void merge_tail(const uint8_t *restrict src, int32_t w, int64_t from, int64_t count, uint8_t *restrict dst) {
    for (int64_t i = from; i < count; i++) {
        for (int32_t b = 0; b < w; b++) {
            dst[i * w + b] = src[b * count + i];
        }
    }
}

STITCH_EXPORT void stitch_split_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
    int64_t i = 0;
#if defined(__x86_64__)
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
    }
#elif defined(__aarch64__)
    /* LD2 / LD4 de-interleave bytes into registers that are exactly the planes. */
    if (w == 2) {
        for (; i + 16 <= count; i += 16) {
            uint8x16x2_t v = vld2q_u8(src + 2 * i);
            vst1q_u8(dst + i, v.val[0]);
            vst1q_u8(dst + count + i, v.val[1]);
        }
    } else if (w == 4) {
        for (; i + 16 <= count; i += 16) {
            uint8x16x4_t v = vld4q_u8(src + 4 * i);
            vst1q_u8(dst + i, v.val[0]);
            vst1q_u8(dst + count + i, v.val[1]);
            vst1q_u8(dst + 2 * count + i, v.val[2]);
            vst1q_u8(dst + 3 * count + i, v.val[3]);
        }
    }
#endif
    split_tail(src, w, i, count, dst);
}

STITCH_EXPORT void stitch_merge_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
    int64_t i = 0;
#if defined(__x86_64__)
    if (w == 2) {
        for (; i + 16 <= count; i += 16) {
            __m128i lo = _mm_loadu_si128((const __m128i *) (src + i));
            __m128i hi = _mm_loadu_si128((const __m128i *) (src + count + i));
            _mm_storeu_si128((__m128i *) (dst + 2 * i), _mm_unpacklo_epi8(lo, hi));
            _mm_storeu_si128((__m128i *) (dst + 2 * i + 16), _mm_unpackhi_epi8(lo, hi));
        }
    } else if (w == 4) {
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
#elif defined(__aarch64__)
    /* ST2 / ST4 interleave the planes' registers back into elements. */
    if (w == 2) {
        for (; i + 16 <= count; i += 16) {
            uint8x16x2_t v = {{vld1q_u8(src + i), vld1q_u8(src + count + i)}};
            vst2q_u8(dst + 2 * i, v);
        }
    } else if (w == 4) {
        for (; i + 16 <= count; i += 16) {
            uint8x16x4_t v = {{vld1q_u8(src + i), vld1q_u8(src + count + i), vld1q_u8(src + 2 * count + i),
                               vld1q_u8(src + 3 * count + i)}};
            vst4q_u8(dst + 4 * i, v);
        }
    }
#endif
    merge_tail(src, w, i, count, dst);
}
