package dev.stitch.memory;

import java.lang.foreign.MemorySegment;

/**
 * Hints for memory-mapped files that are about to be patched in place. Page by page, a sparse patch
 * of a shared file mapping takes a read fault and then a write fault per 4 KiB page (hundreds of
 * thousands per GiB when the page cache holds small folios); faulting the range in writable with one
 * call first removes them.
 */
public final class MappedRegions {

    private MappedRegions() {
    }

    /**
     * Faults the pages under {@code region} (a mapped, writable segment) in writable, without changing
     * any byte. A hint: returns false where the platform or kernel cannot, and nothing else changes.
     */
    public static boolean populateWritable(MemorySegment region) {
        Posix libc = Posix.LIBC;
        if (libc == null || !region.isNative() || region.isReadOnly() || region.byteSize() == 0) {
            return false;
        }
        long page = libc.pageSize;
        long start = region.address() & -page;
        long end = region.address() + region.byteSize();
        return libc.populateWritable(MemorySegment.ofAddress(start).reinterpret(end - start));
    }
}
