package dev.stitch.memory;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/** The few libc calls page-aligned, lockable memory needs (Linux x86-64 / aarch64 constants). */
final class Posix {

    static final int PROT_READ_WRITE = 0x1 | 0x2;
    static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;
    static final int MADV_HUGEPAGE = 14;
    static final int MADV_POPULATE_WRITE = 23;
    static final int RLIMIT_MEMLOCK = 8;
    static final int SC_PAGESIZE = 30;
    static final long RLIM_INFINITY = -1L;

    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    /** Null when libc could not be bound (not Linux); callers then use plain arena memory. */
    static final Posix LIBC = bind();

    private final MethodHandle mmap;
    private final MethodHandle munmap;
    private final MethodHandle mlock;
    private final MethodHandle munlock;
    private final MethodHandle madvise;
    private final MethodHandle getrlimit;
    private final MethodHandle strerror;
    final long pageSize;

    private Posix(Linker linker, java.lang.foreign.SymbolLookup libc) throws Throwable {
        Linker.Option errno = Linker.Option.captureCallState("errno");
        mmap = linker.downcallHandle(libc.find("mmap").orElseThrow(),
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG), errno);
        munmap = linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        mlock = linker.downcallHandle(libc.find("mlock").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), errno);
        munlock = linker.downcallHandle(libc.find("munlock").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
        madvise = linker.downcallHandle(libc.find("madvise").orElseThrow(), FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        getrlimit = linker.downcallHandle(libc.find("getrlimit").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        strerror = linker.downcallHandle(libc.find("strerror").orElseThrow(), FunctionDescriptor.of(ADDRESS, JAVA_INT));
        MethodHandle sysconf = linker.downcallHandle(libc.find("sysconf").orElseThrow(), FunctionDescriptor.of(JAVA_LONG, JAVA_INT));
        long ps = (long) sysconf.invokeExact(SC_PAGESIZE);
        pageSize = ps > 0 ? ps : 4096;
    }

    private static Posix bind() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return null;
        }
        try {
            Linker linker = Linker.nativeLinker();
            return new Posix(linker, linker.defaultLookup());
        } catch (Throwable t) {
            return null;
        }
    }

    /** Maps {@code bytes} (> 0) of zeroed anonymous memory, or throws OutOfMemoryError with errno's text. */
    MemorySegment map(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment p = (MemorySegment) mmap.invokeExact(state, MemorySegment.NULL, bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
            if (p.address() == -1L) {
                throw new OutOfMemoryError("mmap of " + bytes + " bytes failed: " + error((int) ERRNO.get(state, 0L)));
            }
            return p.reinterpret(bytes);
        } catch (OutOfMemoryError e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("mmap failed", t);
        }
    }

    void unmap(MemorySegment region) {
        try {
            int rc = (int) munmap.invokeExact(region, region.byteSize());
            if (rc != 0) {
                throw new IllegalStateException("munmap of " + region.byteSize() + " bytes failed");
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("munmap failed", t);
        }
    }

    /** Returns null on success, else the reason mlock failed. */
    String lock(MemorySegment region) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) mlock.invokeExact(state, region, region.byteSize());
            return rc == 0 ? null : error((int) ERRNO.get(state, 0L));
        } catch (Throwable t) {
            return "mlock call failed: " + t;
        }
    }

    void unlock(MemorySegment region) {
        try {
            // Failure only means the pages were not locked; unmapping next releases them either way.
            int ignored = (int) munlock.invokeExact(region, region.byteSize());
        } catch (Throwable t) {
            throw new IllegalStateException("munlock failed", t);
        }
    }

    /** Asks for transparent huge pages; only a hint, so failure is ignored. */
    void adviseHugePages(MemorySegment region) {
        try {
            int ignored = (int) madvise.invokeExact(region, region.byteSize(), MADV_HUGEPAGE);
        } catch (Throwable t) {
            throw new IllegalStateException("madvise failed", t);
        }
    }

    /**
     * Faults {@code region} in writable with one call (Linux 5.14+); returns false when the kernel
     * refuses, in which case pages simply fault on first touch.
     */
    boolean populateWritable(MemorySegment region) {
        try {
            return (int) madvise.invokeExact(region, region.byteSize(), MADV_POPULATE_WRITE) == 0;
        } catch (Throwable t) {
            throw new IllegalStateException("madvise failed", t);
        }
    }

    /** {soft, hard} RLIMIT_MEMLOCK in bytes, {@link #RLIM_INFINITY} for unlimited; null when unknown. */
    long[] memlockLimit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rl = arena.allocate(16, 8);
            int rc = (int) getrlimit.invokeExact(RLIMIT_MEMLOCK, rl);
            return rc == 0 ? new long[] {rl.get(JAVA_LONG, 0), rl.get(JAVA_LONG, 8)} : null;
        } catch (Throwable t) {
            return null;
        }
    }

    private String error(int errno) {
        try {
            MemorySegment s = (MemorySegment) strerror.invokeExact(errno);
            return s.reinterpret(256).getString(0) + " (errno " + errno + ")";
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
