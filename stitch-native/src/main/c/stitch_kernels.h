/*
 * stitch delta kernels: the byte-level work of sparse weight sync, bound from Java through FFM
 * (dev.stitch.kernels.NativeKernels). This header is the library's exported ABI: the Java side binds
 * these symbols by name with matching FunctionDescriptors, so names and signatures must not change.
 *
 * The Java side checks every bound before calling, so these functions trust their arguments except
 * where a check is documented as part of the result. All multi-byte data is little-endian. Common
 * arguments: w / width is the element width in bytes (1, 2, 4 or 8); pw is the position width (4 or
 * 8); positions are element indices; xor_values selects XOR deltas (1) over plain new values (0).
 *
 * The library builds for linux-x86_64 and linux-aarch64 (build.sh; docs/platforms.md) from the same
 * sources, each SIMD file compiling to nothing on the other target. Sources, one job each:
 * cpu_features.c (run-time ISA dispatch), diff.c (scalar diff and count, entry points), diff_x86.c
 * (AVX2 / AVX-512 diff), diff_neon.c and diff_sve.c (aarch64 diff), diff_xxh3.c (diff fused with the
 * stream hash), apply.c (scatter and byte patches), apply_xxh3.c (scatter fused with the hash, undo),
 * gaps.c (plain and escaped gap coding), planes.c (byte-plane split and merge), value_checks.c (NaN
 * scan, slime v1 checksums), xxh3.c (XXH3-128 one-shot and streaming), xxh3_x86.c and xxh3_arm.c
 * (SIMD stripe accumulate and scramble), memory_traffic.c (streaming read and fill),
 * zstd_sequences.c (zstd literals-only producer). Internal headers: stitch_internal.h (loads, stores,
 * dispatch table), xxh3_internal.h, diff_internal.h.
 */
#ifndef STITCH_KERNELS_H
#define STITCH_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* The library is built with -fvisibility=hidden; only what carries this is exported. */
#define STITCH_EXPORT __attribute__((visibility("default")))

/* Words (u64) in the caller-owned streaming XXH3-128 state (a Java long[64]). */
#define STITCH_XXH3_STATE_WORDS 64

/* One zstd sequence; the layout mirrors ZSTD_Sequence (zstd >= 1.5.4). */
typedef struct {
    unsigned int offset;
    unsigned int lit_length;
    unsigned int match_length;
    unsigned int rep;
} stitch_zstd_sequence;

/* ---- dispatch (cpu_features.c) ---------------------------------------------------------- */

/*
 * Restricts dispatch to at most max_level (0 scalar; 1 AVX2 on x86-64, NEON on aarch64; 2 AVX-512 on
 * x86-64, SVE on aarch64); returns the name of the ISA now in use.
 */
STITCH_EXPORT const char *stitch_cap_isa(int32_t max_level);

/* Returns the name of the ISA in use: "scalar", "avx2", "avx512", "neon" or "sve". */
STITCH_EXPORT const char *stitch_isa(void);

/* ---- diff (diff.c, diff_xxh3.c) --------------------------------------------------------- */

/* Returns the number of width-byte elements that differ between old and neu. */
STITCH_EXPORT int64_t stitch_count_changed(const uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width);

/*
 * Appends the position (base + element index) and value (new, or old XOR new) of every changed
 * element, ascending, copying each change into old when update is set; returns the number of changes.
 */
STITCH_EXPORT int64_t stitch_diff_gather(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                         uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values, int32_t update);

/* stitch_diff_gather that also feeds neu into the streaming XXH3-128 state st; returns the number of changes. */
STITCH_EXPORT int64_t stitch_diff_gather_xxh3(uint8_t *old, const uint8_t *neu, int64_t bytes, int32_t width, int64_t base,
                                              uint8_t *positions, int32_t pw, uint8_t *values, int32_t xor_values,
                                              int32_t update, uint64_t *st);

/* ---- apply (apply.c, apply_xxh3.c) ------------------------------------------------------ */

/* Scatters (or XORs) count values into dst; returns count, or -(k+1) when position k is not below limit (elements before it are written). */
STITCH_EXPORT int64_t stitch_scatter(uint8_t *dst, int64_t limit, int32_t w, const uint8_t *pos, int32_t pw,
                                     const uint8_t *values, int64_t count, int32_t xor_values);

/* Scatters (or XORs) values at the positions of an escaped u16 gap stream validated with stitch_escaped_summary; returns the values applied. */
STITCH_EXPORT int64_t stitch_scatter_escaped(uint8_t *dst, int32_t w, const uint8_t *units, int64_t unit_count,
                                             const uint8_t *values, int32_t xor_values);

/* XORs bytes of payload into dst. */
STITCH_EXPORT void stitch_xor_into(uint8_t *dst, const uint8_t *payload, int64_t bytes);

/* Writes bytes[k] at u32 offsets[k]; returns count, or -(k+1) with nothing written when offset k is not below dst_bytes. */
STITCH_EXPORT int64_t stitch_overwrite_bytes(uint8_t *dst, int64_t dst_bytes, const uint8_t *offsets, const uint8_t *bytes,
                                             int64_t count);

/* XXH3-128 of cur as if count values were scattered (or XORed) in, cur untouched; returns count, or -(k+1) when position k is at or past the end (out not written). */
STITCH_EXPORT int64_t stitch_patched_xxh3(const uint8_t *cur, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                          const uint8_t *values, int64_t count, int32_t xor_values, uint64_t *out);

/* Scatters (or XORs) into dst, saving old elements in undo, and hashes dst's new bytes into out; returns count, or -(k+1) with dst restored when position k is at or past the end. */
STITCH_EXPORT int64_t stitch_scatter_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *pos, int32_t pw,
                                          const uint8_t *values, int64_t count, int32_t xor_values, uint8_t *undo,
                                          uint64_t *out);

/* Puts back the count elements a scatter saved in undo, newest first. */
STITCH_EXPORT void stitch_restore_undo(uint8_t *dst, int32_t w, const uint8_t *pos, int32_t pw, const uint8_t *undo,
                                       int64_t count);

/* stitch_scatter_xxh3 with positions from an escaped u16 gap stream validated with stitch_escaped_summary. */
STITCH_EXPORT void stitch_scatter_escaped_xxh3(uint8_t *dst, int64_t bytes, int32_t w, const uint8_t *units,
                                               int64_t unit_count, const uint8_t *values, int32_t xor_values,
                                               uint8_t *undo, uint64_t *out);

/* ---- gap coding (gaps.c) ---------------------------------------------------------------- */

/* Returns the largest gap pos[k] - pos[k-1] - 1 (the first gap is pos[0]). */
STITCH_EXPORT int64_t stitch_max_gap(const uint8_t *pos, int32_t pw, int64_t count);

/* Writes each gap pos[k] - pos[k-1] - 1 (the first is pos[0]) as a gw-byte element. */
STITCH_EXPORT void stitch_encode_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *gaps, int32_t gw);

/* Rebuilds count positions from gw-byte gaps. */
STITCH_EXPORT void stitch_decode_gaps(const uint8_t *gaps, int32_t gw, int64_t count, uint8_t *pos, int32_t pw);

/* Returns the number of u16 units the escaped gap coding of the positions takes. */
STITCH_EXPORT int64_t stitch_escaped_gap_units(const uint8_t *pos, int32_t pw, int64_t count);

/* Escaped u16 gap coding, the first gap counted from index first (pos[0] - first); returns the units written, or -1 when they would not fit in capacity (output then partial). */
STITCH_EXPORT int64_t stitch_encode_escaped_gaps(const uint8_t *pos, int32_t pw, int64_t count, uint8_t *units,
                                                 int64_t capacity, int64_t first);

/* Returns the positions decoded, or -1 (ends inside an escape), -2 (more than max_count), -3 (position >= limit, in detail[0]). */
STITCH_EXPORT int64_t stitch_decode_escaped_gaps(const uint8_t *units, int64_t unit_count, uint8_t *pos, int32_t pw,
                                                 int64_t max_count, int64_t limit, int64_t *detail);

/* out[0] = sum of all unit values, out[1] = number of units that are not escapes. */
STITCH_EXPORT void stitch_escaped_summary(const uint8_t *units, int64_t unit_count, int64_t *out);

/* ---- byte planes (planes.c) ------------------------------------------------------------- */

/* Splits count w-byte elements into w byte planes, plane b holding byte b of every element. */
STITCH_EXPORT void stitch_split_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst);

/* Merges w byte planes back into count w-byte elements. */
STITCH_EXPORT void stitch_merge_planes(const uint8_t *restrict src, int32_t w, int64_t count, uint8_t *restrict dst);

/* ---- value checks (value_checks.c) ------------------------------------------------------ */

/* Returns 1 if any of count values of float kind (1 bf16, 2 f16, 3 f32, 4 f64, 5 f8 e4m3, 6 f8 e5m2, 7 f8 e8m0) is a NaN, else 0. */
STITCH_EXPORT int32_t stitch_contains_nan(const uint8_t *values, int64_t count, int32_t kind);

/* Returns the XOR of all bytes folded to one byte (slime v1 p, below 256). */
STITCH_EXPORT int64_t stitch_xor_bytes(const uint8_t *data, int64_t bytes);

/* Returns the XOR of each value's exact binary64 widening (slime v1 v); kind 1 bf16, 2 f16, else f32. */
STITCH_EXPORT int64_t stitch_xor_widened(const uint8_t *values, int64_t count, int32_t kind);

/* ---- XXH3-128 (xxh3.c) ------------------------------------------------------------------ */

/* Writes XXH3-128 (seed 0) of len bytes: out[0] = low 64 bits, out[1] = high 64 bits. */
STITCH_EXPORT void stitch_xxh3_128(const uint8_t *in, int64_t len, uint64_t *out);

/* Empties a streaming XXH3-128 state of STITCH_XXH3_STATE_WORDS words. */
STITCH_EXPORT void stitch_xxh3_stream_reset(uint64_t *st);

/* Feeds len bytes into a streaming state. */
STITCH_EXPORT void stitch_xxh3_stream_update(uint64_t *st, const uint8_t *in, int64_t len);

/* Writes the XXH3-128 of everything fed so far to out[0..1]; the state is left unchanged. */
STITCH_EXPORT void stitch_xxh3_stream_digest(const uint64_t *st, uint64_t *out);

/* ---- memory traffic (memory_traffic.c) -------------------------------------------------- */

/* Reads every byte at streaming bandwidth; returns an XOR of them so the reads are kept. */
STITCH_EXPORT uint64_t stitch_read_stream(const uint8_t *p, int64_t bytes);

/* Writes value to every byte. */
STITCH_EXPORT void stitch_fill_stream(uint8_t *p, int64_t bytes, int32_t value);

/* ---- zstd (zstd_sequences.c) ------------------------------------------------------------ */

/* ZSTD_sequenceProducer_F reporting the block as one literals-only sequence; returns 1, or (size_t) -1 (producer error). */
STITCH_EXPORT size_t stitch_zstd_literals_only(void *state, stitch_zstd_sequence *out, size_t capacity, const void *src,
                                               size_t src_size, const void *dict, size_t dict_size, int level,
                                               size_t window);

#endif
