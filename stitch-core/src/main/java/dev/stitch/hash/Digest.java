package dev.stitch.hash;

import java.lang.foreign.MemorySegment;

/**
 * An incremental digest over bytes fed in any split, with a lowercase hex text form: the one shape
 * of every per-tensor checksum (xxh3-128, blake3, adler32; docs/formats/common.md §0.4). Not thread-safe.
 */
public interface Digest {

    /** Feeds {@code data}. */
    Digest update(MemorySegment data);

    /** Lowercase hex of the digest of everything fed so far; the digest stays usable. */
    String hex();
}
