package dev.stitch.kernels;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.LongUnaryOperator;

/**
 * Runs the data-parallel kernels over fixed-size chunks on several threads. Chunk boundaries are
 * multiples of 64 bytes (a cache line, and a whole number of elements of every width), and
 * results are stitched back in chunk order, so output never depends on the chunk size or the
 * number of threads. Closing it shuts down the threads it created (never a caller's executor).
 */
public final class ChunkedKernels implements AutoCloseable {

    /** Default chunk: big enough that per-chunk overhead vanishes, small enough to balance two cores. */
    public static final long DEFAULT_CHUNK_BYTES = 4L << 20;

    private final DeltaKernels kernels;
    private final ExecutorService executor;
    private final boolean ownsExecutor;
    private final int threads;
    private final long chunkBytes;

    private ChunkedKernels(DeltaKernels kernels, ExecutorService executor, boolean ownsExecutor, int threads, long chunkBytes) {
        if (threads < 1) {
            throw new IllegalArgumentException("thread count must be at least 1, got " + threads);
        }
        if (chunkBytes < 64) {
            throw new IllegalArgumentException("chunk size must be at least 64 bytes, got " + chunkBytes);
        }
        this.kernels = kernels;
        this.executor = executor;
        this.ownsExecutor = ownsExecutor;
        this.threads = threads;
        this.chunkBytes = chunkBytes & -64L;
    }

    /** Runs on {@code threads} daemon threads of its own (1 means the calling thread only). */
    public static ChunkedKernels withThreads(DeltaKernels kernels, int threads, long chunkBytes) {
        ExecutorService pool = threads == 1 ? null : Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "stitch-kernels");
            t.setDaemon(true);
            return t;
        });
        return new ChunkedKernels(kernels, pool, true, threads, chunkBytes);
    }

    /** Runs on the caller's executor, assuming it offers {@code threads} threads. */
    public static ChunkedKernels on(DeltaKernels kernels, ExecutorService executor, int threads, long chunkBytes) {
        return new ChunkedKernels(kernels, executor, false, threads, chunkBytes);
    }

    public DeltaKernels kernels() {
        return kernels;
    }

    public int threads() {
        return threads;
    }

    public long chunkBytes() {
        return chunkBytes;
    }

    /** {@link DeltaKernels#countChanged}, chunked. */
    public long countChanged(MemorySegment old, MemorySegment neu, int width) {
        long n = KernelArgs.pair(old, neu, width);
        long[] counts = forEachChunk(n * width, (from, to) ->
            kernels.countChanged(old.asSlice(from, to - from), neu.asSlice(from, to - from), width));
        long total = 0;
        for (long c : counts) {
            total += c;
        }
        return total;
    }

    /**
     * {@link DeltaKernels#diffGather}, chunked: each chunk gathers into the output slots of its own
     * elements, then the slices are moved down in order, giving exactly the single-call output.
     */
    public long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot) {
        KernelArgs.diffGather(old, neu, width, baseIndex, positions, positionWidth, values, updateSnapshot);
        if (threads == 1) {
            // One thread: each chunk appends where the previous one stopped, so nothing needs moving afterwards.
            long k = 0;
            long bytes = old.byteSize();
            for (long from = 0; from < bytes; from += chunkBytes) {
                long len = Math.min(chunkBytes, bytes - from);
                k += kernels.diffGather(old.asSlice(from, len), neu.asSlice(from, len), width, baseIndex + from / width,
                    positions.asSlice(k * positionWidth, len / width * positionWidth), positionWidth,
                    values.asSlice(k * width, len), xorValues, updateSnapshot);
            }
            return k;
        }
        long[] counts = forEachChunk(old.byteSize(), (from, to) -> {
            long first = from / width;
            long elems = (to - from) / width;
            return kernels.diffGather(old.asSlice(from, to - from), neu.asSlice(from, to - from), width, baseIndex + first,
                positions.asSlice(first * positionWidth, elems * positionWidth), positionWidth,
                values.asSlice(first * width, elems * width), xorValues, updateSnapshot);
        });
        long k = 0;
        long chunkElems = chunkBytes / width;
        for (int i = 0; i < counts.length; i++) {
            long first = i * chunkElems;
            if (k != first && counts[i] > 0) {
                MemorySegment.copy(positions, first * positionWidth, positions, k * positionWidth, counts[i] * positionWidth);
                MemorySegment.copy(values, first * width, values, k * width, counts[i] * width);
            }
            k += counts[i];
        }
        return k;
    }

    /** {@link DeltaKernels#scatter}, chunked over the positions (sorted positions touch disjoint elements). */
    public void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        scatterChunked(dst, width, positions, positionWidth, values, count, false);
    }

    /** {@link DeltaKernels#scatterXor}, chunked; positions must be distinct (they are sorted in every format). */
    public void scatterXor(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        scatterChunked(dst, width, positions, positionWidth, values, count, true);
    }

    private void scatterChunked(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values,
                                long count, boolean xor) {
        KernelArgs.scatter(dst, width, positions, positionWidth, values, count);
        // Chunks of positions sized so each covers about chunkBytes of traffic, on 64-byte boundaries of the streams.
        forEachChunk(count * 64, (from, to) -> {
            long k0 = from / 64;
            long k = (to - from) / 64;
            MemorySegment p = positions.asSlice(k0 * positionWidth, k * positionWidth);
            MemorySegment v = values.asSlice(k0 * width, k * width);
            if (xor) {
                kernels.scatterXor(dst, width, p, positionWidth, v, k);
            } else {
                kernels.scatter(dst, width, p, positionWidth, v, k);
            }
            return k;
        });
    }

    /** {@link DeltaKernels#xorInto}, chunked. */
    public void xorInto(MemorySegment dst, MemorySegment payload) {
        if (dst.byteSize() < payload.byteSize()) {
            throw new IllegalArgumentException("xor payload of " + payload.byteSize() + " bytes is larger than the destination's " + dst.byteSize());
        }
        KernelArgs.writable(dst, "destination");
        forEachChunk(payload.byteSize(), (from, to) -> {
            kernels.xorInto(dst.asSlice(from, to - from), payload.asSlice(from, to - from));
            return 0;
        });
    }

    /** {@link DeltaKernels#streamRead}, chunked (the floor's read bandwidth with several threads). */
    public long streamRead(MemorySegment data) {
        long[] parts = forEachChunk(data.byteSize(), (from, to) -> kernels.streamRead(data.asSlice(from, to - from)));
        long x = 0;
        for (long p : parts) {
            x ^= p;
        }
        return x;
    }

    /** {@link DeltaKernels#streamFill}, chunked. */
    public void streamFill(MemorySegment data, byte value) {
        forEachChunk(data.byteSize(), (from, to) -> {
            kernels.streamFill(data.asSlice(from, to - from), value);
            return 0;
        });
    }

    @FunctionalInterface
    private interface ChunkTask {
        long run(long from, long to);
    }

    /** Runs {@code task} over [0, bytes) in chunkBytes pieces; returns each chunk's result in order. */
    private long[] forEachChunk(long bytes, ChunkTask task) {
        int chunks = (int) Math.max(1, (bytes + chunkBytes - 1) / chunkBytes);
        long[] results = new long[chunks];
        LongUnaryOperator end = i -> Math.min(bytes, (i + 1) * chunkBytes);
        if (threads == 1 || chunks == 1) {
            for (int i = 0; i < chunks; i++) {
                results[i] = task.run(i * chunkBytes, end.applyAsLong(i));
            }
            return results;
        }
        List<CompletableFuture<Void>> futures = new ArrayList<>(chunks);
        for (int i = 0; i < chunks; i++) {
            int idx = i;
            futures.add(CompletableFuture.runAsync(() -> results[idx] = task.run(idx * chunkBytes, end.applyAsLong(idx)), executor));
        }
        try {
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
        return results;
    }

    @Override
    public void close() {
        if (ownsExecutor && executor != null) {
            executor.shutdown();
        }
    }
}
