package dev.stitch.memory;

import java.lang.foreign.MemorySegment;

/**
 * One page-aligned off-heap allocation. Closing it returns the memory to its allocator; using the
 * segment afterwards fails (the segment's scope is closed).
 */
public interface OffHeapBuffer extends AutoCloseable {

    /** The usable bytes, exactly the size asked for. */
    MemorySegment segment();

    MemoryPurpose purpose();

    /** True when the pages are locked in RAM (mlock succeeded). */
    boolean pinned();

    /** Releases the memory; idempotent. */
    @Override
    void close();
}
