package dev.stitch.kernels;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;

/**
 * The byte-level work of delta sync, one interface over two implementations: C kernels bound
 * through FFM, and a pure-Java fallback. Both must give bit-identical results (one shared contract
 * test). All multi-byte data is little-endian. Segments may be native or heap; lengths are in
 * elements unless a name says bytes. Implementations are thread-safe and stateless; callers split
 * large tensors into chunks and run chunks on their own threads (results never depend on chunking).
 *
 * <p>Position streams hold element indices as unsigned integers of {@code positionWidth} bytes
 * (4 or 8). Gap streams follow docs/formats/sparse-delta.md §2.4 ({@code g[0] = idx[0]},
 * {@code g[k] = idx[k] - idx[k-1] - 1}).
 */
public interface DeltaKernels {

    /** {@code "native"} or {@code "java"}. */
    String implementation();

    /** The instruction set actually dispatched to, e.g. {@code "avx512"}, {@code "avx2"}, {@code "neon"}, {@code "sve"}, {@code "scalar"}, {@code "vector-api-512-compress"}, {@code "swar"}. */
    String isa();

    // ---- diff -------------------------------------------------------------------------------

    /** Number of {@code width}-byte elements whose bit patterns differ; both segments have equal byte size, a multiple of width. */
    long countChanged(MemorySegment old, MemorySegment neu, int width);

    /**
     * Fused scan: for every element {@code i} (in ascending order) whose bits differ between
     * {@code old} and {@code neu}, appends {@code baseIndex + i} to {@code positions} (as
     * {@code positionWidth}-byte unsigned integers) and the element's new bytes to {@code values}
     * (or, when {@code xorValues}, the bytes of {@code new XOR old}); when {@code updateSnapshot}
     * is set, also copies the new element into {@code old}, so old and new are each read once.
     * Output capacity must be at least the element count of the inputs.
     *
     * @return the number of changed elements written
     */
    long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                    MemorySegment positions, int positionWidth, MemorySegment values,
                    boolean xorValues, boolean updateSnapshot);

    /**
     * {@link #diffGather}, also feeding {@code neu} into {@code newBytes}; the result equals a
     * diffGather followed by {@code newBytes.update(neu)}. The native kernels fuse the two for bf16
     * (the hash works on the lines the compare already loaded, in the shadow of its memory stalls)
     * when {@code newBytes} is one of theirs.
     */
    default long diffGatherHashing(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                                   MemorySegment positions, int positionWidth, MemorySegment values,
                                   boolean xorValues, boolean updateSnapshot, Xxh3Stream newBytes) {
        long n = diffGather(old, neu, width, baseIndex, positions, positionWidth, values, xorValues, updateSnapshot);
        newBytes.update(neu);
        return n;
    }

    /** True if any of {@code count} values of a floating-point {@code dtype} is a NaN (any payload). Integer dtypes never are. */
    boolean containsNaN(MemorySegment values, Dtype dtype, long count);

    // ---- gap codecs -------------------------------------------------------------------------

    /** Largest gap (including {@code g[0]}) of {@code count} sorted positions; 0 when count is 0. */
    long maxGap(MemorySegment positions, int positionWidth, long count);

    /** Writes {@code count} fixed-width gaps ({@code gapWidth} 2 or 4); the caller checked {@link #maxGap} fits. */
    void encodeGaps(MemorySegment positions, int positionWidth, long count, MemorySegment gaps, int gapWidth);

    /** Inverse of {@link #encodeGaps}, accumulating in 64 bits. */
    void decodeGaps(MemorySegment gaps, int gapWidth, long count, MemorySegment positions, int positionWidth);

    /**
     * Number of u16 units the escaped gap stream of stitch_delta needs: a gap {@code g} costs
     * {@code g / 65535} units of {@code 0xFFFF} plus one unit {@code g % 65535}.
     */
    long escapedGapUnits(MemorySegment positions, int positionWidth, long count);

    /** Writes the escaped u16 gap stream; returns the units written. */
    default long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units) {
        return encodeEscapedGaps(positions, positionWidth, count, units, 0);
    }

    /**
     * Writes one piece of an escaped u16 gap stream whose first gap counts from {@code firstIndex}
     * ({@code g[0] = idx[0] - firstIndex}); returns the units written.
     *
     * @throws IllegalArgumentException when {@code units} cannot hold them or the first position lies
     *     before {@code firstIndex}
     */
    long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units, long firstIndex);

    /**
     * Decodes an escaped u16 gap stream of {@code unitCount} units into positions.
     *
     * @return the number of positions decoded
     * @throws IllegalArgumentException when the stream ends inside an escape, or yields more than
     *     {@code maxCount} positions or a position {@code >= limit}
     */
    long decodeEscapedGaps(MemorySegment units, long unitCount, MemorySegment positions, int positionWidth,
                           long maxCount, long limit);

    // ---- byte planes ------------------------------------------------------------------------

    /** Splits {@code count} units of {@code width} bytes into {@code width} planes (all byte 0s, then all byte 1s, ...); src and dst must not overlap. */
    void splitPlanes(MemorySegment src, int width, long count, MemorySegment dst);

    /** Inverse of {@link #splitPlanes}. */
    void mergePlanes(MemorySegment src, int width, long count, MemorySegment dst);

    // ---- apply ------------------------------------------------------------------------------

    /** {@code dst[pos[k]] = values[k]} for {@code width}-byte elements; positions are trusted (range-checked by the caller). */
    void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count);

    /** {@code dst[pos[k]] ^= values[k]}. */
    void scatterXor(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count);

    /**
     * Fused apply straight from an escaped u16 gap stream: rebuilds positions on the fly and writes
     * (or, when {@code xor}, XORs) values into {@code dst}.
     *
     * @return the number of elements written
     * @throws IllegalArgumentException on a malformed stream, a count mismatch or a position past {@code dst}
     */
    long scatterEscapedGaps(MemorySegment dst, int width, MemorySegment units, long unitCount,
                            MemorySegment values, long count, boolean xor);

    /** {@code dst[i] ^= payload[i]} over {@code payload.byteSize()} bytes (dense xor delta). */
    void xorInto(MemorySegment dst, MemorySegment payload);

    /** {@code dst[offsets[k]] = bytes[k]} with u32 byte offsets (slime v2 overwrite payload). */
    void overwriteBytes(MemorySegment dst, MemorySegment offsets, MemorySegment bytes, long count);

    // ---- checksums --------------------------------------------------------------------------

    /** XXH3-128 (seed 0) of the whole segment, equal to the reference implementation. */
    Hash128 xxh3(MemorySegment data);

    /** A new incremental XXH3-128 on this implementation (see {@link Xxh3Stream}). */
    Xxh3Stream newXxh3Stream();

    /**
     * XXH3-128 of the bytes {@code current} would hold after {@link #scatter} (or {@link #scatterXor}
     * when {@code xor}) of {@code count} values, computed block by block in cache without writing
     * {@code current}, which is read once. Positions must be strictly ascending; with positions out of
     * order the digest is unspecified (but nothing is written).
     *
     * @throws IllegalArgumentException when a position is outside {@code current}
     */
    Hash128 patchedXxh3(MemorySegment current, int width, MemorySegment positions, int positionWidth,
                        MemorySegment values, long count, boolean xor);

    /**
     * Fused apply and verify: {@link #scatter} (or {@link #scatterXor} when {@code xor}) of
     * {@code count} values into {@code dst}, returning the XXH3-128 of {@code dst}'s new bytes; each
     * block is hashed right after it is patched, so {@code dst} is read once. The old bytes of element
     * {@code k} are saved at {@code undo[k]} ({@code count * width} bytes) before it is written, so
     * {@link #restoreUndo} can put {@code dst} back exactly when the digest turns out wrong.
     *
     * @throws IllegalArgumentException when a position is outside {@code dst}; {@code dst} is then
     *     already put back and unchanged
     */
    Hash128 scatterXxh3(MemorySegment dst, int width, MemorySegment positions, int positionWidth,
                        MemorySegment values, long count, boolean xor, MemorySegment undo);

    /**
     * {@link #scatterXxh3} with positions rebuilt from an escaped u16 gap stream (as
     * {@link #scatterEscapedGaps}); undo it with {@code scatterEscapedGaps(dst, width, units, unitCount, undo, count, false)}.
     *
     * @throws IllegalArgumentException on a malformed stream, a count mismatch or a position past
     *     {@code dst}, all found before anything is written
     */
    Hash128 scatterEscapedXxh3(MemorySegment dst, int width, MemorySegment units, long unitCount,
                               MemorySegment values, long count, boolean xor, MemorySegment undo);

    /** Undoes {@link #scatterXxh3}: writes {@code undo[k]} back at {@code positions[k]}, newest first. */
    void restoreUndo(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count);

    /** XOR of all bytes, each zero-extended (slime v1 {@code p}, always {@code < 256}). */
    long xorBytes(MemorySegment data);

    /** XOR of each value's exact widening to IEEE binary64 bits (slime v1 {@code v}); dtype is BF16, F16 or F32. */
    long xorWidenedValues(MemorySegment values, Dtype dtype, long count);

    // ---- memory-traffic floor ---------------------------------------------------------------

    /**
     * Reads every byte of {@code data} once, as fast as this implementation can stream memory (the
     * {@code B_r} of docs/performance-targets.md §7.2), and returns a value that depends on all of them.
     */
    long streamRead(MemorySegment data);

    /** Fills {@code data} with {@code value} as fast as this implementation can (the {@code B_w} of 7.2). */
    void streamFill(MemorySegment data, byte value);
}
