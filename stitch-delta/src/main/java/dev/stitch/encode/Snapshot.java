package dev.stitch.encode;

import dev.stitch.memory.BufferAllocator;
import dev.stitch.memory.MemoryPurpose;
import dev.stitch.memory.TensorBlock;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongConsumer;

/**
 * The publisher's copy of the last durably published weights, in off-heap memory from a
 * {@link BufferAllocator} (pinned when the publisher asks for it and the memory-lock limit allows):
 * the base every new version is diffed against (docs/formats/common.md §1.2 and 1.7). It changes only through
 * {@link DeltaEncoder#advance} after a version is published, or {@link #reseed} after a full-only
 * version. Tensors are kept in ascending byte order of their names.
 */
public final class Snapshot implements AutoCloseable {

    private final BufferAllocator allocator;
    private final boolean ownsAllocator;
    private TensorBlock memory;
    private Map<String, TensorData> tensors = Map.of();
    private long byteSize;
    private boolean closed;

    private Snapshot(BufferAllocator allocator, boolean ownsAllocator) {
        this.allocator = allocator;
        this.ownsAllocator = ownsAllocator;
    }

    /** A snapshot without tensors in memory of its own: the first version diffed against it is full-only. */
    public static Snapshot empty() {
        return new Snapshot(BufferAllocator.unpinned("snapshot"), true);
    }

    /** A snapshot without tensors whose memory comes from {@code allocator} (which the caller closes after it). */
    public static Snapshot empty(BufferAllocator allocator) {
        return new Snapshot(allocator, false);
    }

    /** A snapshot holding a byte-for-byte copy of {@code tensors} in memory of its own; names must be unique. */
    public static Snapshot copyOf(Collection<TensorData> tensors) {
        Snapshot s = empty();
        try {
            s.reseed(tensors);
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
        return s;
    }

    /** As {@link #copyOf(Collection)}, with memory from {@code allocator}. */
    public static Snapshot copyOf(BufferAllocator allocator, Collection<TensorData> tensors) {
        return copyOf(allocator, tensors, bytes -> { });
    }

    /** As {@link #copyOf(BufferAllocator, Collection)}, reporting copied bytes to {@code copied}. */
    public static Snapshot copyOf(BufferAllocator allocator, Collection<TensorData> tensors, LongConsumer copied) {
        Snapshot s = empty(allocator);
        try {
            s.reseed(tensors, copied);
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
        return s;
    }

    /**
     * Replaces every tensor with a byte-for-byte copy of {@code next} (a full-only version, or
     * seeding from the served checkpoint); the previous memory is released.
     */
    public synchronized void reseed(Collection<TensorData> next) {
        reseed(next, bytes -> { });
    }

    /** As {@link #reseed(Collection)}, telling {@code copied} the bytes of each tensor once it is copied. */
    public synchronized void reseed(Collection<TensorData> next, LongConsumer copied) {
        checkOpen();
        Map<String, TensorData> sorted = new TreeMap<>(WeightsDigest.NAME_ORDER);
        List<TensorSpec> specs = new ArrayList<>(next.size());
        for (TensorData t : next) {
            if (sorted.put(t.name(), t) != null) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
            specs.add(t.spec());
        }
        // TensorBlock lays tensors out in natural name order; handing them over in that order keeps its size exact.
        specs.sort(Comparator.comparing(TensorSpec::name));
        TensorBlock fresh = TensorBlock.allocate(allocator, specs, MemoryPurpose.SNAPSHOT);
        Map<String, TensorData> copies = new LinkedHashMap<>();
        long total = 0;
        try {
            for (TensorData t : sorted.values()) {
                MemorySegment copy = fresh.data(t.name());
                MemorySegment.copy(t.bytes(), 0, copy, 0, copy.byteSize());
                copies.put(t.name(), new TensorData(t.spec(), copy));
                total += copy.byteSize();
                copied.accept(copy.byteSize());
            }
        } catch (RuntimeException | Error e) {
            fresh.close();
            throw e;
        }
        TensorBlock old = memory;
        memory = fresh;
        tensors = Collections.unmodifiableMap(copies);
        byteSize = total;
        if (old != null) {
            old.close();
        }
    }

    /** True when the snapshot's pages are locked in RAM. */
    public synchronized boolean pinned() {
        return memory != null && memory.pinned();
    }

    /** Tensor specs in ascending byte order of names. */
    public synchronized List<TensorSpec> specs() {
        List<TensorSpec> out = new ArrayList<>(tensors.size());
        for (TensorData t : tensors.values()) {
            out.add(t.spec());
        }
        return out;
    }

    /** The tensor named {@code name}, or null. Its bytes stay valid until the next reseed or close. */
    public synchronized TensorData tensor(String name) {
        return tensors.get(name);
    }

    /** Every tensor, in ascending byte order of names. */
    public synchronized Collection<TensorData> tensors() {
        return tensors.values();
    }

    /** Name → bytes, e.g. for {@link WeightsDigest#of}. */
    public synchronized Map<String, MemorySegment> segments() {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        tensors.forEach((k, v) -> m.put(k, v.bytes()));
        return m;
    }

    public synchronized int size() {
        return tensors.size();
    }

    public synchronized boolean isEmpty() {
        return tensors.isEmpty();
    }

    /** Bytes of all tensors. */
    public synchronized long byteSize() {
        return byteSize;
    }

    /** Whether {@code specs} is exactly this snapshot's set of (name, dtype, shape). */
    public synchronized boolean sameLayout(Collection<TensorSpec> specs) {
        if (specs.size() != tensors.size()) {
            return false;
        }
        Set<String> seen = new HashSet<>();
        for (TensorSpec s : specs) {
            TensorData mine = tensors.get(s.name());
            if (mine == null || !mine.spec().equals(s) || !seen.add(s.name())) {
                return false;
            }
        }
        return true;
    }

    /** Weights digest of the snapshot (docs/protocol/sync-and-engines.md §7.4). */
    public String weightsDigest() {
        return WeightsDigest.of(segments());
    }

    /** Releases the memory (and the allocator when the snapshot made its own); later use fails. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (memory != null) {
            memory.close();
        }
        memory = null;
        tensors = Map.of();
        byteSize = 0;
        if (ownsAllocator) {
            allocator.close();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("snapshot is closed");
        }
    }
}
