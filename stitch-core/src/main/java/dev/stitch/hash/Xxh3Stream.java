package dev.stitch.hash;

import java.lang.foreign.MemorySegment;

/**
 * Incremental XXH3-128 (seed 0): feeding any split of an input gives the same digest as the one-shot
 * hash of the whole. It lets data be hashed block by block while each block is still in cache, during
 * a pass that reads it anyway. {@link Xxh3#newStream()} returns the fastest one available (the
 * native kernels' when stitch-native is present, else {@link Xxh3.Hasher}). Not thread-safe; it holds
 * no native memory, so there is nothing to close.
 */
public interface Xxh3Stream extends Digest {

    /** Feeds {@code data}. */
    @Override
    Xxh3Stream update(MemorySegment data);

    /** The digest of everything fed so far; the stream stays usable. */
    Hash128 digest();

    /** The canonical hex of {@link #digest()}. */
    @Override
    default String hex() {
        return digest().hex();
    }

    /** Bytes fed so far. */
    long length();

    /** Forgets everything fed, as if new. */
    Xxh3Stream reset();
}
