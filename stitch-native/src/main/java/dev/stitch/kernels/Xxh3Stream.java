package dev.stitch.kernels;

import dev.stitch.hash.Hash128;
import java.lang.foreign.MemorySegment;

/**
 * Incremental XXH3-128 (seed 0) from {@link DeltaKernels#newXxh3Stream()}: feeding any split of an
 * input gives the same digest as {@link DeltaKernels#xxh3} of the whole. It lets a tensor be hashed
 * block by block while each block is still in cache, during a pass that reads it anyway. Not
 * thread-safe; it holds no native memory, so there is nothing to close.
 */
public interface Xxh3Stream {

    /** Feeds {@code data}. */
    Xxh3Stream update(MemorySegment data);

    /** The digest of everything fed so far; the stream stays usable. */
    Hash128 digest();

    /** Bytes fed so far. */
    long length();

    /** Forgets everything fed, as if new. */
    Xxh3Stream reset();
}
