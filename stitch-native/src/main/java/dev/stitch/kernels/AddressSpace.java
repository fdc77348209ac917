package dev.stitch.kernels;

import java.lang.foreign.MemorySegment;

/**
 * The whole native address space as one constant segment, so a Java kernel whose every bound was
 * checked before its loop (KernelArgs, and the loop's own limits) can reach native memory by
 * absolute address. Accesses through a constant segment compile to plain loads and stores; through
 * the caller's segments each one re-checks bounds, liveness and read-only state, which cost the
 * Java diff a third of its time (docs/platforms.md). Like the C kernels, such a loop trusts the
 * caller to keep its segments alive for the call. Null where native access is refused
 * ({@code --illegal-native-access=deny} without {@code --enable-native-access}); callers then keep
 * their checked paths.
 */
final class AddressSpace {

    /** Every native address, or null when this module may not reinterpret segments. */
    static final MemorySegment ALL = everything();

    private AddressSpace() {
    }

    private static MemorySegment everything() {
        try {
            return MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
        } catch (IllegalCallerException e) {
            return null;
        }
    }

    /** True when every segment is native and {@link #ALL} exists, so all of them can be reached by address. */
    static boolean reaches(MemorySegment a, MemorySegment b, MemorySegment c, MemorySegment d) {
        return ALL != null && a.isNative() && b.isNative() && c.isNative() && d.isNative();
    }

    static boolean reaches(MemorySegment a, MemorySegment b, MemorySegment c) {
        return ALL != null && a.isNative() && b.isNative() && c.isNative();
    }
}
