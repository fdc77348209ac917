package dev.stitch.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Host memory from anonymous {@code mmap} (page-aligned, zeroed, huge-page advised), optionally
 * {@code mlock}ed. Without libc (non-Linux) it falls back to page-aligned arena memory.
 */
final class PageAllocator implements BufferAllocator {

    private static final Logger LOG = LoggerFactory.getLogger(PageAllocator.class);
    /** mlock failing is a property of the process limit, so one warning per process is enough. */
    private static final AtomicBoolean WARNED = new AtomicBoolean();
    private static final long HUGE_PAGE = 2L << 20;
    /** Frames skipped when recording who allocated a buffer. */
    private static final Set<String> PLUMBING = Set.of(PageAllocator.class.getName(), BufferAllocator.class.getName(),
        TensorBlock.class.getName());

    private final String name;
    private final boolean pin;
    private final EnumMap<MemoryPurpose, AtomicLong> byPurpose = new EnumMap<>(MemoryPurpose.class);
    private final AtomicLong total = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();
    private final Set<Buffer> open = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    PageAllocator(String name, boolean pin) {
        this.name = name;
        this.pin = pin;
        for (MemoryPurpose p : MemoryPurpose.values()) {
            byPurpose.put(p, new AtomicLong());
        }
    }

    @Override
    public OffHeapBuffer allocate(long bytes, MemoryPurpose purpose) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative allocation size " + bytes);
        }
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
        Posix libc = Posix.LIBC;
        Arena arena = Arena.ofShared();
        MemorySegment region = null;
        boolean locked = false;
        MemorySegment user;
        try {
            if (bytes == 0) {
                user = arena.allocate(0, 1);
            } else if (libc != null) {
                long mapped = (bytes + libc.pageSize - 1) / libc.pageSize * libc.pageSize;
                region = libc.map(mapped);
                if (mapped >= HUGE_PAGE) {
                    libc.adviseHugePages(region);
                }
                if (pin) {
                    String error = libc.lock(region);
                    locked = error == null;
                    if (!locked && WARNED.compareAndSet(false, true)) {
                        LOG.warn("cannot pin host memory (mlock of {} failed: {}; RLIMIT_MEMLOCK {}); continuing unpinned. "
                            + "Raise the limit (ulimit -l, or LimitMEMLOCK= for systemd) to pin snapshots.",
                            MemoryLock.describe(mapped), error, MemoryLock.limitDescription());
                    }
                }
                MemorySegment mappedRegion = region;
                boolean wasLocked = locked;
                user = region.reinterpret(bytes, arena, ignored -> {
                    if (wasLocked) {
                        libc.unlock(mappedRegion);
                    }
                    libc.unmap(mappedRegion);
                });
            } else {
                user = arena.allocate(bytes, 4096);
            }
        } catch (RuntimeException | Error e) {
            if (region != null) {
                libc.unmap(region);
            }
            arena.close();
            throw e;
        }
        Buffer buffer = new Buffer(arena, user, purpose, locked, callerFrame());
        open.add(buffer);
        byPurpose.get(purpose).addAndGet(bytes);
        long now = total.addAndGet(bytes);
        peak.accumulateAndGet(now, Math::max);
        return buffer;
    }

    private static String callerFrame() {
        return StackWalker.getInstance().walk(frames -> frames
            .filter(f -> !PLUMBING.contains(f.getClassName()))
            .findFirst()
            .map(f -> f.getClassName() + "." + f.getMethodName() + ":" + f.getLineNumber())
            .orElse("unknown"));
    }

    @Override
    public long allocated(MemoryPurpose purpose) {
        return byPurpose.get(purpose).get();
    }

    @Override
    public long allocated() {
        return total.get();
    }

    @Override
    public Map<MemoryPurpose, Long> allocatedByPurpose() {
        EnumMap<MemoryPurpose, Long> out = new EnumMap<>(MemoryPurpose.class);
        byPurpose.forEach((p, v) -> out.put(p, v.get()));
        return Collections.unmodifiableMap(out);
    }

    @Override
    public long peak() {
        return peak.get();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void close() {
        if (!open.isEmpty()) {
            String leaks = open.stream()
                .map(b -> b.purpose + " " + b.segment.byteSize() + " bytes allocated at " + b.site)
                .sorted()
                .collect(Collectors.joining("; "));
            throw new IllegalStateException("allocator '" + name + "' closed with " + open.size() + " buffer(s), "
                + total.get() + " bytes outstanding " + allocatedByPurpose() + ": " + leaks);
        }
        closed = true;
    }

    @Override
    public String toString() {
        return "BufferAllocator[" + name + ", " + allocatedByPurpose() + "]";
    }

    private final class Buffer implements OffHeapBuffer {
        private final Arena arena;
        private final MemorySegment segment;
        private final MemoryPurpose purpose;
        private final boolean pinned;
        private final String site;
        private final AtomicBoolean released = new AtomicBoolean();

        Buffer(Arena arena, MemorySegment segment, MemoryPurpose purpose, boolean pinned, String site) {
            this.arena = arena;
            this.segment = segment;
            this.purpose = purpose;
            this.pinned = pinned;
            this.site = site;
        }

        @Override
        public MemorySegment segment() {
            return segment;
        }

        @Override
        public MemoryPurpose purpose() {
            return purpose;
        }

        @Override
        public boolean pinned() {
            return pinned;
        }

        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                arena.close();
                open.remove(this);
                byPurpose.get(purpose).addAndGet(-segment.byteSize());
                total.addAndGet(-segment.byteSize());
            }
        }

        @Override
        public String toString() {
            return "OffHeapBuffer[" + purpose + ", " + segment.byteSize() + " bytes" + (pinned ? ", pinned" : "") + "]";
        }
    }
}
