package dev.stitch.memory;

/** What off-heap bytes are for; allocators account bytes per purpose. */
public enum MemoryPurpose {
    /** The engine-side copy of the weights that the next diff compares against. */
    SNAPSHOT,
    /** Buffers holding a version on its way to or from the board (decoded streams, payloads). */
    STAGING,
    /** Short-lived working memory of kernels and codecs. */
    SCRATCH
}
