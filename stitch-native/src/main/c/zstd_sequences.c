/*
 * A zstd external sequence producer (ZSTD_sequenceProducer_F, zstd >= 1.5.4) that reports the whole
 * block as literals. Registered on a compression context it turns zstd into a Huffman-only coder:
 * on byte planes whose bytes are skewed but never repeat in runs (the low bytes of gaps and of
 * value XORs), level 1's match search finds only short, costly matches, and skipping it is both
 * about three times faster and a little smaller. stitch_zstd_sequence (stitch_kernels.h) mirrors ZSTD_Sequence.
 */
#include "stitch_internal.h"

STITCH_EXPORT size_t stitch_zstd_literals_only(void *state, stitch_zstd_sequence *out, size_t capacity, const void *src,
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
