package dev.stitch.encode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayList;
import java.util.List;

/**
 * Memory for the transient data of one version at a time (a diff's changes, a writer's encoded
 * records), kept from one version to the next: the pages are mapped and faulted in once rather than
 * on every version. {@link #reset} hands the memory out again from the start (invalidating what it
 * held); beyond {@code retainedBytes} it is freed at that point, so one dense version does not pin
 * its size for good. Not thread-safe.
 */
public final class VersionMemory implements SegmentAllocator, AutoCloseable {

    /** Smallest block taken from the system. */
    private static final long BLOCK_BYTES = 32L << 20;

    private final long retainedBytes;
    private final List<Arena> arenas = new ArrayList<>();
    private final List<MemorySegment> blocks = new ArrayList<>();
    private int block = -1;
    private long used;
    private boolean closed;

    /** @param retainedBytes memory kept mapped across {@link #reset}s */
    public VersionMemory(long retainedBytes) {
        if (retainedBytes < 0) {
            throw new IllegalArgumentException("retained bytes must not be negative, got " + retainedBytes);
        }
        this.retainedBytes = retainedBytes;
    }

    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        if (closed) {
            throw new IllegalStateException("version memory is closed");
        }
        if (byteSize < 0 || byteAlignment <= 0 || Long.bitCount(byteAlignment) != 1) {
            throw new IllegalArgumentException("bad size " + byteSize + " or alignment " + byteAlignment);
        }
        if (block >= 0) {
            MemorySegment b = blocks.get(block);
            long at = align(b.address() + used, byteAlignment) - b.address();
            if (at + byteSize <= b.byteSize()) {
                used = at + byteSize;
                return b.asSlice(at, byteSize);
            }
        }
        // the next retained block when it is large enough, else a new one in its place
        block++;
        long need = byteSize + byteAlignment;
        if (block == blocks.size() || blocks.get(block).byteSize() < need) {
            Arena arena = Arena.ofShared();
            arenas.add(block, arena);
            blocks.add(block, arena.allocate(Math.max(BLOCK_BYTES, need), 64));
        }
        MemorySegment b = blocks.get(block);
        long at = align(b.address(), byteAlignment) - b.address();
        used = at + byteSize;
        return b.asSlice(at, byteSize);
    }

    /**
     * At least {@code bytes} of free, 8-byte aligned memory at the end, not yet claimed: for a writer
     * that knows only an upper bound of what it will produce. {@link #keep} then claims its first bytes.
     */
    public MemorySegment reserve(long bytes) {
        MemorySegment room = allocate(bytes, 8);
        used -= bytes;
        return room;
    }

    /** Claims the first {@code bytes} of the last {@link #reserve}d room. */
    public void keep(long bytes) {
        // keep what follows 8-byte aligned
        used += (bytes + 7) & ~7L;
    }

    /** Invalidates every segment handed out and starts over, freeing blocks beyond the retained size. */
    public void reset() {
        long kept = 0;
        int i = 0;
        while (i < blocks.size()) {
            if (kept + blocks.get(i).byteSize() > retainedBytes) {
                arenas.remove(i).close();
                blocks.remove(i);
            } else {
                kept += blocks.get(i).byteSize();
                i++;
            }
        }
        block = -1;
        used = 0;
    }

    /** Bytes currently mapped. */
    public long mappedBytes() {
        long n = 0;
        for (MemorySegment b : blocks) {
            n += b.byteSize();
        }
        return n;
    }

    private static long align(long address, long alignment) {
        return (address + alignment - 1) & -alignment;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            for (Arena a : arenas) {
                a.close();
            }
            arenas.clear();
            blocks.clear();
        }
    }
}
