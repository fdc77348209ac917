package dev.stitch.memory;

import java.util.Map;

/**
 * Allocates page-aligned off-heap buffers and accounts them by purpose. Closing an allocator with
 * buffers still open fails and names them, so leaks surface in tests instead of in production.
 * Implementations are thread-safe.
 */
public interface BufferAllocator extends AutoCloseable {

    /** A zero-filled buffer of {@code bytes} bytes (0 allowed). */
    OffHeapBuffer allocate(long bytes, MemoryPurpose purpose);

    /** Bytes currently outstanding for one purpose. */
    long allocated(MemoryPurpose purpose);

    /** Bytes currently outstanding in total. */
    long allocated();

    /** Outstanding bytes per purpose (every purpose present, zero included). */
    Map<MemoryPurpose, Long> allocatedByPurpose();

    /** Highest total ever outstanding at once. */
    long peak();

    String name();

    /**
     * Closes the allocator.
     *
     * @throws IllegalStateException if buffers are still open; they stay valid so nothing is freed under a user
     */
    @Override
    void close();

    /** An allocator that tries to {@code mlock} its buffers (warning once, via SLF4J, when the limit forbids it). */
    static BufferAllocator pinned(String name) {
        return new PageAllocator(name, true);
    }

    /** An allocator of page-aligned memory that never locks it. */
    static BufferAllocator unpinned(String name) {
        return new PageAllocator(name, false);
    }
}
