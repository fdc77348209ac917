package dev.stitch.encode;

import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongConsumer;

/**
 * Diffs new weights against the {@link Snapshot} of the last published ones (docs/formats/common.md §1):
 * element bit patterns are compared as unsigned integers of the storage width, so {@code -0.0} vs
 * {@code +0.0} and NaN payloads are exact; unchanged tensors are omitted; a different (name, dtype,
 * shape) set yields a layout change instead of a delta.
 *
 * <p>Tensors are cut into chunks of at most {@code chunkElements} elements that run on
 * {@code threads} workers; each chunk gathers into its worker's spill memory and is then copied
 * into its place, so the output is identical for every thread count and chunk size. The diff never
 * touches the snapshot: {@link #advance} applies a version to it once the version is durably
 * published, so a failed publish leaves the base intact (docs/formats/common.md §1.7).
 *
 * <p>For stitch_delta the diff can hand over {@linkplain TensorChange.EscapedPlanes escaped planes}
 * instead of positions and values: each chunk turns its gathered changes into gap units and byte
 * planes while they are still in cache, and only those planes are copied into place, so the writer
 * compresses them as they are (docs/formats/stitch-delta.md §4.2).
 */
public final class DeltaEncoder implements AutoCloseable {

    /** 1 Mi elements per chunk: large enough to amortise scheduling, small enough to balance threads. */
    public static final long DEFAULT_CHUNK_ELEMENTS = 1L << 20;
    /** New bytes per kernel call: the grain at which a chunk checks whether it may hash yet. */
    static final long HASH_SLICE_BYTES = 256L << 10;
    /** Spill memory (a {@link VersionMemory} per worker for chunk outputs) a worker keeps between diffs. */
    private static final long RETAINED_SPILL_BYTES = 64L << 20;

    private static final long TWO_POW_32 = 1L << 32;

    private final DeltaKernels kernels;
    private final ChunkRunner runner;
    private final long chunkElements;
    private final VersionMemory[] spillPositions;
    private final VersionMemory[] spillValues;
    /** Per-worker memory for one chunk's positions, values and gap units while it becomes planes. */
    private final VersionMemory[] chunkScratch;
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
        this.spillPositions = new VersionMemory[threads];
        this.spillValues = new VersionMemory[threads];
        this.chunkScratch = new VersionMemory[threads];
        for (int w = 0; w < threads; w++) {
            spillPositions[w] = new VersionMemory(RETAINED_SPILL_BYTES);
            spillValues[w] = new VersionMemory(RETAINED_SPILL_BYTES);
            chunkScratch[w] = new VersionMemory(RETAINED_SPILL_BYTES);
        }
    }

    public DeltaKernels kernels() {
        return kernels;
    }

    public int threads() {
        return runner.threads();
    }

    /** The encoder's workers, for format writers that encode on them between diffs; the encoder closes it. */
    public ChunkRunner runner() {
        return runner;
    }

    /**
     * Compares {@code next} with {@code base}. Positions and values live in {@code out} (an arena, or
     * a {@link VersionMemory} reused across versions);
     * {@link TensorChange#oldTensor()} is the snapshot's memory and {@link TensorChange#newTensor()}
     * the caller's, both valid until the snapshot advances.
     *
     * @param mode whether values carry the new bits or {@code new XOR old}
     */
    public EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode, SegmentAllocator out) {
        return diff(base, next, mode, out, bytes -> { });
    }

    /**
     * As {@link #diff(Snapshot, Collection, ValueMode, SegmentAllocator)}, telling {@code compared}
     * the bytes of new weights of each finished chunk; it is called from worker threads, so it must
     * be thread-safe.
     * Every change carries the xxh3-128 of its new tensor, hashed while the diff has it in cache.
     */
    public EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode, SegmentAllocator out,
                               LongConsumer compared) {
        return diff(base, next, mode, out, compared, true);
    }

    /**
     * As {@link #diff(Snapshot, Collection, ValueMode, SegmentAllocator, LongConsumer)};
     * {@code digestNew} says whether changes carry {@link TensorChange#newDigest()} (formats that
     * record it want it, the others save the hashing).
     */
    public EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode,
                               SegmentAllocator out, LongConsumer compared, boolean digestNew) {
        return diff(base, next, mode, out, compared, digestNew, false);
    }

    /**
     * As {@link #diff(Snapshot, Collection, ValueMode, SegmentAllocator, LongConsumer, boolean)};
     * with {@code escapedPlanes} every change carries {@link TensorChange#escaped()} (the stitch_delta
     * sparse planes, in {@code out}) instead of positions and values.
     */
    public synchronized EncodedVersion diff(Snapshot base, Collection<TensorData> next, ValueMode mode,
                                            SegmentAllocator out, LongConsumer compared, boolean digestNew,
                                            boolean escapedPlanes) {
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
            int ordinal = 0;
            for (long start = 0; start < numel; start += chunkElements) {
                chunks.add(new Chunk(ti, ordinal++, start, Math.min(chunkElements, numel - start)));
            }
        }
        TensorData[] olds = new TensorData[sorted.size()];
        for (int ti = 0; ti < olds.length; ti++) {
            olds[ti] = base.tensor(sorted.get(ti).name());
        }
        boolean xor = mode == ValueMode.XOR;
        HashOrder hashes = digestNew ? new HashOrder(sorted.size()) : null;
        for (int w = 0; w < spillPositions.length; w++) {
            spillPositions[w].reset();
            spillValues[w].reset();
        }
        runner.run(chunks.size(), (worker, index) -> {
            try {
                diffChunk(chunks.get(index), sorted, olds, worker, xor, hashes, escapedPlanes);
            } catch (Throwable t) {
                if (hashes != null) {
                    hashes.abandon();
                }
                throw t;
            }
            Chunk c = chunks.get(index);
            compared.accept(c.count * sorted.get(c.tensor).spec().dtype().width());
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
            while (ci < chunks.size() && chunks.get(ci).tensor == ti) {
                count += chunks.get(ci).changed;
                ci++;
            }
            if (count == 0) {
                continue;
            }
            Hash128 digest = hashes == null ? null : hashes.digest(ti);
            if (escapedPlanes) {
                TensorChange.EscapedPlanes planes = joinPlanes(chunks.subList(first, ci), count, width, out);
                changes.add(new TensorChange(neu.spec(), count, null, positionWidth, null, xor, olds[ti].bytes(),
                        neu.bytes(), digest, planes));
                changedElements += count;
                changedBytes += count * width;
                continue;
            }
            // one copy from the workers' spill memory, which the next diff reuses, into the caller's arena
            MemorySegment positions = out.allocate(count * positionWidth, positionWidth);
            MemorySegment values = out.allocate(count * width, width);
            long at = 0;
            for (int k = first; k < ci; k++) {
                Chunk c = chunks.get(k);
                if (c.changed > 0) {
                    MemorySegment.copy(c.positions, 0, positions, at * positionWidth, c.changed * positionWidth);
                    MemorySegment.copy(c.values, 0, values, at * width, c.changed * width);
                    at += c.changed;
                }
            }
            changes.add(new TensorChange(neu.spec(), count, positions, positionWidth, values, xor,
                    olds[ti].bytes(), neu.bytes(), digest));
            changedElements += count;
            changedBytes += count * width;
        }
        for (int w = 0; w < spillPositions.length; w++) {
            spillPositions[w].reset();
            spillValues[w].reset();
        }
        return new EncodedVersion(changes, false, mode, sorted.size(), totalElements, totalBytes,
                changedElements, changedBytes, System.nanoTime() - started);
    }

    /**
     * Diffs one chunk in slices of {@link #HASH_SLICE_BYTES}; once the chunk's predecessors in the
     * same tensor are hashed, the kernel hashes each slice while it diffs it; before that the chunk
     * diffs on and hashes what it skipped once its turn comes.
     */
    private void diffChunk(Chunk c, List<TensorData> sorted, TensorData[] olds, int worker, boolean xor,
                           HashOrder hashes, boolean escapedPlanes) {
        TensorData neu = sorted.get(c.tensor);
        int width = neu.spec().dtype().width();
        int positionWidth = positionWidth(neu.spec());
        MemorySegment oldTensor = olds[c.tensor].bytes();
        MemorySegment newTensor = neu.bytes();
        MemorySegment pos;
        MemorySegment val;
        if (escapedPlanes) {
            chunkScratch[worker].reset();
            pos = chunkScratch[worker].allocate(c.count * positionWidth, 8);
            val = chunkScratch[worker].allocate(c.count * width, 8);
        } else {
            pos = spillPositions[worker].reserve(c.count * positionWidth);
            val = spillValues[worker].reserve(c.count * width);
        }
        long sliceElements = hashes == null ? c.count : Math.max(1, HASH_SLICE_BYTES / width);
        boolean myTurn = false;
        long hashed = 0;
        long n = 0;
        for (long s = 0; s < c.count; s += sliceElements) {
            long len = Math.min(sliceElements, c.count - s);
            long from = (c.start + s) * width;
            MemorySegment oldSlice = oldTensor.asSlice(from, len * width);
            MemorySegment newSlice = newTensor.asSlice(from, len * width);
            if (hashes != null && (myTurn || (myTurn = hashes.isTurn(c.tensor, c.ordinal)))) {
                Xxh3Stream stream = hashes.stream(c.tensor, kernels);
                if (hashed < s) {
                    stream.update(newTensor.asSlice((c.start + hashed) * width, (s - hashed) * width));
                }
                // all before this slice is hashed, so the kernel hashes the slice as it diffs it
                n += kernels.diffGatherHashing(oldSlice, newSlice, width, c.start + s, pos.asSlice(n * positionWidth),
                        positionWidth, val.asSlice(n * width), xor, false, stream);
                hashed = s + len;
            } else {
                n += kernels.diffGather(oldSlice, newSlice, width, c.start + s, pos.asSlice(n * positionWidth),
                        positionWidth, val.asSlice(n * width), xor, false);
            }
        }
        if (hashes != null) {
            if (hashed < c.count) {
                hashes.awaitTurn(c.tensor, c.ordinal);
                hashes.stream(c.tensor, kernels).update(
                        newTensor.asSlice((c.start + hashed) * width, (c.count - hashed) * width));
            }
            hashes.pass(c.tensor);
        }
        c.changed = n;
        if (escapedPlanes) {
            toPlanes(c, pos, positionWidth, val, width, n, worker);
            return;
        }
        spillPositions[worker].keep(n * positionWidth);
        spillValues[worker].keep(n * width);
        c.positions = pos;
        c.values = val;
    }

    /**
     * Turns a chunk's gathered changes, still in cache, into its piece of the escaped gap stream
     * (counted from the chunk's first element) and byte planes, kept in the worker's spill memory;
     * {@link #joinPlanes} later re-counts each piece's first gap from the change before it.
     */
    private void toPlanes(Chunk c, MemorySegment pos, int positionWidth, MemorySegment val, int width, long n, int worker) {
        if (n == 0) {
            return;
        }
        MemorySegment units = chunkScratch[worker].allocate(2 * (n + c.count / 65535 + 1), 8);
        long u = kernels.encodeEscapedGaps(pos, positionWidth, n, units, c.start);
        MemorySegment gapPlanes = spillPositions[worker].reserve(2 * u);
        kernels.splitPlanes(units, 2, u, gapPlanes);
        spillPositions[worker].keep(2 * u);
        MemorySegment valuePlanes = spillValues[worker].reserve(n * width);
        kernels.splitPlanes(val, width, n, valuePlanes);
        spillValues[worker].keep(n * width);
        c.positions = gapPlanes.asSlice(0, 2 * u);
        c.values = valuePlanes.asSlice(0, n * width);
        c.units = u;
        c.firstPosition = TensorChange.position(pos, positionWidth, 0);
        c.lastPosition = TensorChange.position(pos, positionWidth, n - 1);
    }

    /**
     * The planes of one tensor from its chunks' pieces: each piece's leading units (its first gap,
     * counted from the chunk start) are replaced by that gap counted from the previous change, then
     * every plane is copied once into {@code out}.
     */
    private static TensorChange.EscapedPlanes joinPlanes(List<Chunk> chunks, long count, int width, SegmentAllocator out) {
        long units = 0;
        long prev = -1;
        for (Chunk c : chunks) {
            if (c.changed > 0) {
                units += c.units - leadingUnits(c.firstPosition - c.start) + leadingUnits(c.firstPosition - prev - 1);
                prev = c.lastPosition;
            }
        }
        MemorySegment planes = out.allocate(2 * units + count * width, 8);
        MemorySegment lo = planes.asSlice(0, units);
        MemorySegment hi = planes.asSlice(units, units);
        long u = 0;
        long v = 0;
        prev = -1;
        for (Chunk c : chunks) {
            if (c.changed == 0) {
                continue;
            }
            long gap = c.firstPosition - prev - 1;
            long escapes = gap / 65535;
            lo.asSlice(u, escapes).fill((byte) 0xFF);
            hi.asSlice(u, escapes).fill((byte) 0xFF);
            u += escapes;
            lo.set(ValueLayout.JAVA_BYTE, u, (byte) (gap % 65535));
            hi.set(ValueLayout.JAVA_BYTE, u, (byte) ((gap % 65535) >>> 8));
            u++;
            long skip = leadingUnits(c.firstPosition - c.start);
            long rest = c.units - skip;
            MemorySegment.copy(c.positions, skip, lo, u, rest);
            MemorySegment.copy(c.positions, c.units + skip, hi, u, rest);
            u += rest;
            for (int b = 0; b < width; b++) {
                MemorySegment.copy(c.values, b * c.changed, planes, 2 * units + b * count + v, c.changed);
            }
            v += c.changed;
            prev = c.lastPosition;
        }
        return new TensorChange.EscapedPlanes(planes, units);
    }

    /** Units one gap takes in the escaped stream. */
    private static long leadingUnits(long gap) {
        return gap / 65535 + 1;
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
            if (c.escaped() != null) {
                // a gap stream is read from its start, so escaped planes scatter one tensor per task
                ranges.add(new ScatterRange(c, target.bytes(), 0, c.count()));
                continue;
            }
            for (long start = 0; start < c.count(); start += chunkElements) {
                ranges.add(new ScatterRange(c, target.bytes(), start, Math.min(chunkElements, c.count() - start)));
            }
        }
        runner.run(ranges.size(), (worker, index) -> {
            ScatterRange r = ranges.get(index);
            TensorChange c = r.change;
            int width = c.spec().dtype().width();
            if (c.escaped() != null) {
                VersionMemory scratch = chunkScratch[worker];
                scratch.reset();
                TensorChange.EscapedPlanes p = c.escaped();
                MemorySegment units = scratch.allocate(2 * p.units(), 8);
                MemorySegment values = scratch.allocate(c.count() * width, 8);
                kernels.mergePlanes(p.gapPlanes(), 2, p.units(), units);
                kernels.mergePlanes(p.valuePlanes(), width, c.count(), values);
                kernels.scatterEscapedGaps(r.target, width, units, p.units(), values, c.count(), c.xorValues());
                return;
            }
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
            for (int w = 0; w < spillPositions.length; w++) {
                spillPositions[w].close();
                spillValues[w].close();
                chunkScratch[w].close();
            }
        }
    }

    private static final class Chunk {
        final int tensor;
        final int ordinal;
        final long start;
        final long count;
        long changed;
        /** Positions, or the gap planes (low bytes, then high bytes) when the diff makes escaped planes. */
        MemorySegment positions;
        /** Values, or the value planes when the diff makes escaped planes. */
        MemorySegment values;
        long units;
        long firstPosition;
        long lastPosition;

        Chunk(int tensor, int ordinal, long start, long count) {
            this.tensor = tensor;
            this.ordinal = ordinal;
            this.start = start;
            this.count = count;
        }
    }

    /**
     * Keeps each tensor's streaming hash in element order across workers: chunk k of a tensor may
     * feed the hash only after chunk k-1 passed it on. Chunks are claimed in index order, so the
     * chunk being waited for is always running or done and the wait cannot deadlock; a failing
     * chunk abandons the whole diff so that no worker waits for a turn that never comes.
     */
    private static final class HashOrder {
        private final int[] turn;
        private final Xxh3Stream[] streams;
        private boolean abandoned;

        HashOrder(int tensors) {
            this.turn = new int[tensors];
            this.streams = new Xxh3Stream[tensors];
        }

        synchronized boolean isTurn(int tensor, int ordinal) {
            return turn[tensor] == ordinal;
        }

        synchronized void awaitTurn(int tensor, int ordinal) {
            while (turn[tensor] != ordinal) {
                if (abandoned) {
                    throw new IllegalStateException("diff abandoned after another chunk failed");
                }
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting to hash a chunk", e);
                }
            }
        }

        /** The tensor's stream; only the chunk whose turn it is calls this. */
        synchronized Xxh3Stream stream(int tensor, DeltaKernels kernels) {
            Xxh3Stream s = streams[tensor];
            if (s == null) {
                s = kernels.newXxh3Stream();
                streams[tensor] = s;
            }
            return s;
        }

        synchronized void pass(int tensor) {
            turn[tensor]++;
            notifyAll();
        }

        synchronized void abandon() {
            abandoned = true;
            notifyAll();
        }

        /** Digest of a tensor all of whose chunks passed. */
        synchronized Hash128 digest(int tensor) {
            return streams[tensor].digest();
        }
    }

    private record ScatterRange(TensorChange change, MemorySegment target, long start, long count) {
    }
}
