/*
 * Byte-plane split and merge of fixed-width values, so each byte position compresses on its own.
 */
#include "stitch_internal.h"

/* Byte-plane split and merge. bf16/f16 (w == 2) and f32 (w == 4) use SSE2, part of every x86-64, so
   they need no dispatch; the plain loops cover the other widths. */
STITCH_EXPORT void stitch_split_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
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

STITCH_EXPORT void stitch_merge_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst) {
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
