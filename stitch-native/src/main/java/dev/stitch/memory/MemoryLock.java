package dev.stitch.memory;

import java.lang.foreign.MemorySegment;

/** What this process may pin: the RLIMIT_MEMLOCK values and whether {@code mlock} works at all. */
public final class MemoryLock {

    private MemoryLock() {
    }

    /** RLIMIT_MEMLOCK, e.g. {@code "soft 8.0 MiB, hard 8.0 MiB"}, or why it is unknown. */
    public static String limitDescription() {
        if (Posix.LIBC == null) {
            return "unknown (libc not bound on this platform)";
        }
        long[] limit = Posix.LIBC.memlockLimit();
        if (limit == null) {
            return "unknown (getrlimit failed)";
        }
        return "soft " + describe(limit[0]) + ", hard " + describe(limit[1]);
    }

    /** The soft RLIMIT_MEMLOCK in bytes, {@code Long.MAX_VALUE} when unlimited, -1 when unknown. */
    public static long softLimit() {
        long[] limit = Posix.LIBC == null ? null : Posix.LIBC.memlockLimit();
        if (limit == null) {
            return -1;
        }
        return limit[0] == Posix.RLIM_INFINITY ? Long.MAX_VALUE : limit[0];
    }

    /** Locks and unlocks one page; returns null when that works, else the reason. */
    public static String probe() {
        Posix libc = Posix.LIBC;
        if (libc == null) {
            return "libc not bound on this platform";
        }
        MemorySegment page = libc.map(libc.pageSize);
        try {
            String error = libc.lock(page);
            if (error == null) {
                libc.unlock(page);
            }
            return error;
        } finally {
            libc.unmap(page);
        }
    }

    static String describe(long bytes) {
        if (bytes == Posix.RLIM_INFINITY || bytes == Long.MAX_VALUE) {
            return "unlimited";
        }
        if (bytes >= 1L << 30) {
            return String.format(java.util.Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        return bytes + " bytes";
    }
}
