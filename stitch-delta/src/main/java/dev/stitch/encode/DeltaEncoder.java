package dev.stitch.encode;

import dev.stitch.kernels.DeltaKernels;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.tensor.WeightsDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongConsumer;

/**
 * Diffs new weights against the {@link Snapshot} of the last published ones (delta-formats.md 1):
 * element bit patterns are compared as unsigned integers of the storage width, so {@code -0.0} vs
 * {@code +0.0} and NaN payloads are exact; unchanged tensors are omitted; a different (name, dtype,
 * shape) set yields a layout change instead of a delta.
 *
 * <p>Tensors are cut into chunks of at most {@code chunkElements} elements that run on
 * {@code threads} workers; each chunk gathers into its worker's scratch memory and is then copied
 * into its place, so the output is identical for every thread count and chunk size. The diff never
 * touches the snapshot: {@link #advance} applies a version to it once the version is durably
 * published, so a failed publish leaves the base intact (delta-formats.md 1.7).
 */
public final class DeltaEncoder implements AutoCloseable {

    /** 1 Mi elements per chunk: large enough to amortise scheduling, small enough to balance threads. */
    public static final long DEFAULT_CHUNK_ELEMENTS = 1L << 20;

    private static final long TWO_POW_32 = 1L << 32;

    private final DeltaKernels kernels;
    private final ChunkRunner runner;
    private final long chunkElements;
    private final Arena scratchArena = Arena.ofShared();
    private final MemorySegment[] scratchPositions;
    private final MemorySegment[] scratchValues;
    private boolean closed;

    public DeltaEncoder(DeltaKernels kernels, int threads) {
        this(kernels, threads, DEFAULT_CHUNK_ELEMENTS);
    }

    public DeltaEncoder(DeltaKernels kernels, int threads, long chunkElements) {
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        if (chunkElements < 1) {
            throw new IllegalArgumentException("chunk size must be at least one element, got " + chunkElements);
        }
        this.chunkElements = chunkElements;
        this.runner = new ChunkRunner(threads, "stitch-encode");
        this.scratchPositions = new MemorySegment[threads];
        this.scratchValues = new MemorySegment[threads];
    }

    public DeltaKernels kernels() {
        return kernels;
    }

    public int threads() {
        return runner.threads();
    }

    /**
     * Compares {@code next} with {@code base}. Positions, values and the list live in {@code out};
     * {@link TensorChange#oldTensor()} is the snapshot's memory and {@link TensorChange#newTensor()}
     * the caller's, both valid until the snapshot advances.
     *
     * @param mode whether values carry the new bits or {@code new XOR old}
     */
    public EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode, Arena out) {
        return diff(base, next, mode, out, bytes -> { });
    }

    /**
     * As {@link #diff(Snapshot, Collection, ValueMode, Arena)}, telling {@code compared} the bytes of
     * new weights of each finished chunk; it is called from worker threads, so it must be thread-safe.
     */
    public synchronized EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode, Arena out,
                                            LongConsumer compared) {
        checkOpen();
        long started = System.nanoTime();
        List<TensorData> sorted = sortedUnique(next);
        long totalElements = 0;
        long totalBytes = 0;
        List<TensorSpec> specs = new ArrayList<>(sorted.size());
        for (TensorData t : sorted) {
            totalElements += t.spec().numel();
            totalBytes += t.spec().byteLength();
            specs.add(t.spec());
        }
        if (!base.sameLayout(specs)) {
            return new EncodedVersion(List.of(), true, mode, sorted.size(), totalElements, totalBytes,
                    totalElements, totalBytes, System.nanoTime() - started);
        }

        List<Chunk> chunks = new ArrayList<>();
        for (int ti = 0; ti < sorted.size(); ti++) {
            long numel = sorted.get(ti).spec().numel();
            for (long start = 0; start < numel; start += chunkElements) {
                chunks.add(new Chunk(ti, start, Math.min(chunkElements, numel - start)));
            }
        }
        TensorData[] olds = new TensorData[sorted.size()];
        for (int ti = 0; ti < olds.length; ti++) {
            olds[ti] = base.tensor(sorted.get(ti).name());
        }
        boolean xor = mode == ValueMode.XOR;
        runner.run(chunks.size(), (worker, index) -> {
            Chunk c = chunks.get(index);
            TensorData neu = sorted.get(c.tensor);
            int width = neu.spec().dtype().width();
            int positionWidth = positionWidth(neu.spec());
            MemorySegment oldSlice = olds[c.tensor].bytes().asSlice(c.start * width, c.count * width);
            MemorySegment newSlice = neu.bytes().asSlice(c.start * width, c.count * width);
            MemorySegment pos = scratch(scratchPositions, worker, chunkElements * Long.BYTES);
            MemorySegment val = scratch(scratchValues, worker, chunkElements * Long.BYTES);
            long n = kernels.diffGather(oldSlice, newSlice, width, c.start, pos, positionWidth, val, xor, false);
            if (n > 0) {
                MemorySegment p;
                MemorySegment v;
                synchronized (out) {
                    p = out.allocate(n * positionWidth, positionWidth);
                    v = out.allocate(n * width, width);
                }
                MemorySegment.copy(pos, 0, p, 0, n * positionWidth);
                MemorySegment.copy(val, 0, v, 0, n * width);
                c.positions = p;
                c.values = v;
            }
            c.changed = n;
            compared.accept(c.count * width);
        });

        List<TensorChange> changes = new ArrayList<>();
        long changedElements = 0;
        long changedBytes = 0;
        int ci = 0;
        for (int ti = 0; ti < sorted.size(); ti++) {
            TensorData neu = sorted.get(ti);
            int width = neu.spec().dtype().width();
            int positionWidth = positionWidth(neu.spec());
            int first = ci;
            long count = 0;
            int withChanges = 0;
            while (ci < chunks.size() && chunks.get(ci).tensor == ti) {
                count += chunks.get(ci).changed;
                withChanges += chunks.get(ci).changed > 0 ? 1 : 0;
                ci++;
            }
            if (count == 0) {
                continue;
            }
            MemorySegment positions;
            MemorySegment values;
            if (withChanges == 1) {
                Chunk only = null;
                for (int k = first; k < ci; k++) {
                    if (chunks.get(k).changed > 0) {
                        only = chunks.get(k);
                    }
                }
                positions = only.positions;
                values = only.values;
            } else {
                positions = out.allocate(count * positionWidth, positionWidth);
                values = out.allocate(count * width, width);
                long at = 0;
                for (int k = first; k < ci; k++) {
                    Chunk c = chunks.get(k);
                    if (c.changed > 0) {
                        MemorySegment.copy(c.positions, 0, positions, at * positionWidth, c.changed * positionWidth);
                        MemorySegment.copy(c.values, 0, values, at * width, c.changed * width);
                        at += c.changed;
                    }
                }
            }
            changes.add(new TensorChange(neu.spec(), count, positions, positionWidth, values, xor,
                    olds[ti].bytes(), neu.bytes()));
            changedElements += count;
            changedBytes += count * width;
        }
        return new EncodedVersion(changes, false, mode, sorted.size(), totalElements, totalBytes,
                changedElements, changedBytes, System.nanoTime() - started);
    }

    /**
     * Brings {@code snapshot} to the weights {@code version} was diffed from: scatters each change's
     * values (or XORs) into the snapshot, or reseeds it from {@code next} after a layout change.
     * Call only once the version is durably published.
     */
    public synchronized void advance(Snapshot snapshot, EncodedVersion version, Collection<TensorData> next) {
        checkOpen();
        if (version.layoutChanged()) {
            snapshot.reseed(next);
            return;
        }
        List<ScatterRange> ranges = new ArrayList<>();
        for (TensorChange c : version.changes()) {
            TensorData target = snapshot.tensor(c.spec().name());
            if (target == null || !target.spec().equals(c.spec())) {
                throw new IllegalStateException("snapshot has no tensor " + c.spec() + " to advance");
            }
            for (long start = 0; start < c.count(); start += chunkElements) {
                ranges.add(new ScatterRange(c, target.bytes(), start, Math.min(chunkElements, c.count() - start)));
            }
        }
        runner.run(ranges.size(), (worker, index) -> {
            ScatterRange r = ranges.get(index);
            TensorChange c = r.change;
            int width = c.spec().dtype().width();
            MemorySegment pos = c.positions().asSlice(r.start * c.positionWidth(), r.count * c.positionWidth());
            MemorySegment val = c.values().asSlice(r.start * width, r.count * width);
            if (c.xorValues()) {
                kernels.scatterXor(r.target, width, pos, c.positionWidth(), val, r.count);
            } else {
                kernels.scatter(r.target, width, pos, c.positionWidth(), val, r.count);
            }
        });
    }

    /** Position width of a tensor's change records: 4 bytes while every index fits, else 8. */
    public static int positionWidth(TensorSpec spec) {
        return spec.numel() <= TWO_POW_32 ? 4 : 8;
    }

    /** {@code next} sorted by name byte order; duplicates are an error. */
    static List<TensorData> sortedUnique(Collection<TensorData> next) {
        List<TensorData> sorted = new ArrayList<>(next);
        sorted.sort((a, b) -> WeightsDigest.NAME_ORDER.compare(a.name(), b.name()));
        Set<String> seen = new HashSet<>();
        for (TensorData t : sorted) {
            if (!seen.add(t.name())) {
                throw new IllegalArgumentException("duplicate tensor name '" + t.name() + "'");
            }
        }
        return sorted;
    }

    private MemorySegment scratch(MemorySegment[] slots, int worker, long bytes) {
        MemorySegment s = slots[worker];
        if (s == null) {
            synchronized (scratchArena) {
                s = scratchArena.allocate(bytes, 64);
            }
            slots[worker] = s;
        }
        return s;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("encoder is closed");
        }
    }

    /** Stops the workers and frees scratch memory. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            runner.close();
            scratchArena.close();
        }
    }

    private static final class Chunk {
        final int tensor;
        final long start;
        final long count;
        long changed;
        MemorySegment positions;
        MemorySegment values;

        Chunk(int tensor, long start, long count) {
            this.tensor = tensor;
            this.start = start;
            this.count = count;
        }
    }

    private record ScatterRange(TensorChange change, MemorySegment target, long start, long count) {
    }
}
