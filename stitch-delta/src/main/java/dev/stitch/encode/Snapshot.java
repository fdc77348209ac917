package dev.stitch.encode;

import dev.stitch.tensor.TensorSpec;
import dev.stitch.tensor.WeightsDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The publisher's copy of the last durably published weights, in off-heap memory it owns: the base
 * every new version is diffed against (delta-formats.md 1.2 and 1.7). It changes only through
 * {@link DeltaEncoder#advance} after a version is published, or {@link #reseed} after a full-only
 * version. Tensors are kept in ascending byte order of their names.
 */
public final class Snapshot implements AutoCloseable {

    /** Cache-line alignment keeps the kernels' vector loads aligned with the trainer's buffers. */
    private static final long ALIGNMENT = 64;

    private Arena arena;
    private Map<String, TensorData> tensors = Map.of();
    private long byteSize;
    private boolean closed;

    private Snapshot() {
    }

    /** A snapshot without tensors: the first version diffed against it is a full-only version. */
    public static Snapshot empty() {
        return new Snapshot();
    }

    /** A snapshot holding a byte-for-byte copy of {@code tensors}; names must be unique. */
    public static Snapshot copyOf(Collection<TensorData> tensors) {
        Snapshot s = new Snapshot();
        s.reseed(tensors);
        return s;
    }

    /**
     * Replaces every tensor with a byte-for-byte copy of {@code next} (a full-only version, or
     * seeding from the served checkpoint); the previous memory is released.
     */
    public synchronized void reseed(Collection<TensorData> next) {
        checkOpen();
        Map<String, TensorData> sorted = new TreeMap<>(WeightsDigest.NAME_ORDER);
        for (TensorData t : next) {
            if (sorted.put(t.name(), t) != null) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
        }
        Arena fresh = Arena.ofShared();
        Map<String, TensorData> copies = new LinkedHashMap<>();
        long total = 0;
        try {
            for (TensorData t : sorted.values()) {
                long n = t.spec().byteLength();
                MemorySegment copy = fresh.allocate(Math.max(1, n), ALIGNMENT).asSlice(0, n);
                MemorySegment.copy(t.bytes(), 0, copy, 0, n);
                copies.put(t.name(), new TensorData(t.spec(), copy));
                total += n;
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            fresh.close();
            throw e;
        }
        Arena old = arena;
        arena = fresh;
        tensors = Collections.unmodifiableMap(copies);
        byteSize = total;
        if (old != null) {
            old.close();
        }
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

    /** Weights digest of the snapshot (board-and-sidecar.md 7.4). */
    public String weightsDigest() {
        return WeightsDigest.of(segments());
    }

    /** Releases the memory; later use fails. */
    @Override
    public synchronized void close() {
        if (arena != null) {
            arena.close();
        }
        arena = null;
        tensors = Map.of();
        byteSize = 0;
        closed = true;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("snapshot is closed");
        }
    }
}
