package dev.stitch.format;
import dev.stitch.digest.Digests;

import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.hash.Digest;
import dev.stitch.hash.Xxh3Stream;
import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A decoded, validated change of one tensor, independent of the format it came from: what to write
 * where, and the digest the tensor's new bytes must have (when the format carries one). The host
 * applier either writes and hashes in one pass, keeping what it overwrote ({@link #applyAndDigest}),
 * or checks the digest without writing ({@link #newDigest}) and then writes ({@link #applyInPlace}).
 * The byte work runs on {@link Kernels#get()}.
 */
public final class TensorPatch {

    /** How {@link #values()} relate to the tensor. */
    public enum Kind {
        /** {@code t[pos[k]] = values[k]}. */
        SCATTER,
        /** {@code t[pos[k]] ^= values[k]}. */
        SCATTER_XOR,
        /** {@code t = values} (whole tensor). */
        DENSE_SET,
        /** {@code t ^= values} (whole tensor). */
        DENSE_XOR,
        /** {@code t ^= zstd-decode(frame)}, decoded as a stream in blocks so the payload is never held whole. */
        DENSE_XOR_FRAME,
        /** As {@link #SCATTER}, positions kept as the escaped u16 gap stream of stitch_delta (2 bytes a change, not 8). */
        SCATTER_ESCAPED,
        /** As {@link #SCATTER_XOR}, positions kept as an escaped u16 gap stream. */
        SCATTER_ESCAPED_XOR
    }

    /** Bytes decoded per block of a streamed frame (docs/formats/disk-delta.md §3.4: blocks of at most 2 MiB). */
    public static final int STREAM_BLOCK = 2 << 20;

    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final String name;
    private final long byteLength;
    private final int width;
    private final Kind kind;
    /** u64 LE element indices; for escaped kinds decoded from {@link #units} on first use by a window pass. */
    private MemorySegment positions;
    private final MemorySegment units;
    private final long unitCount;
    private final long count;
    private final MemorySegment values;
    private final String expected;
    private final String digestFormat;

    private TensorPatch(String name, long byteLength, int width, Kind kind, MemorySegment positions, long count, MemorySegment values,
                        String expected, String digestFormat) {
        this(name, byteLength, width, kind, positions, null, 0, count, values, expected, digestFormat);
    }

    private TensorPatch(String name, long byteLength, int width, Kind kind, MemorySegment positions, MemorySegment units, long unitCount,
                        long count, MemorySegment values, String expected, String digestFormat) {
        this.name = Objects.requireNonNull(name);
        this.units = units;
        this.unitCount = unitCount;
        this.byteLength = byteLength;
        this.width = width;
        this.kind = kind;
        this.positions = positions;
        this.count = count;
        this.values = values;
        this.expected = expected == null ? null : Digests.normalize(expected);
        this.digestFormat = digestFormat;
        boolean dense = kind == Kind.DENSE_SET || kind == Kind.DENSE_XOR;
        if (kind == Kind.DENSE_XOR_FRAME) {
            return;
        }
        if (units != null) {
            if (values.byteSize() != count * width || units.byteSize() < unitCount * 2) {
                throw new IllegalArgumentException("patch of " + name + ": value or gap bytes do not match");
            }
            return;
        }
        if (dense ? values.byteSize() != byteLength : (values.byteSize() != count * width || positions.byteSize() < count * 8)) {
            throw new IllegalArgumentException("patch of " + name + ": value bytes do not match");
        }
    }

    /**
     * A scatter patch; positions are checked here to be strictly ascending and inside the tensor.
     *
     * @param positions element indices (byte offsets when {@code width} is 1)
     * @param values    {@code positions.length * width} bytes
     * @param expected  hex digest of the new tensor bytes, or null when the format has none
     */
    public static TensorPatch scatter(String name, long byteLength, int width, boolean xor, long[] positions, MemorySegment values,
                                      String expected, String digestFormat) {
        MemorySegment pos = MemorySegment.ofArray(new byte[Math.multiplyExact(positions.length, 8)]);
        long prev = -1;
        for (int k = 0; k < positions.length; k++) {
            long p = positions[k];
            if (p <= prev || p >= byteLength / width) {
                throw new DeltaFormatException("patch of " + name + ": position " + p + " out of order or out of range");
            }
            pos.set(U64, 8L * k, p);
            prev = p;
        }
        return new TensorPatch(name, byteLength, width, xor ? Kind.SCATTER_XOR : Kind.SCATTER, pos, positions.length, values, expected, digestFormat);
    }

    /**
     * A scatter patch over positions a decoder already proved strictly ascending and inside the
     * tensor (u64 LE, {@code count} entries).
     */
    public static TensorPatch scatterDecoded(String name, long byteLength, int width, boolean xor, MemorySegment positions, long count,
                                             MemorySegment values, String expected, String digestFormat) {
        return new TensorPatch(name, byteLength, width, xor ? Kind.SCATTER_XOR : Kind.SCATTER, positions, count, values, expected, digestFormat);
    }

    /**
     * A scatter patch whose positions stay an escaped u16 gap stream (stitch_delta 2.4). The stream is
     * checked (well formed, {@code count} positions, all inside the tensor) by the kernel that first
     * uses it, before it writes anything.
     */
    public static TensorPatch scatterEscaped(String name, long byteLength, int width, boolean xor, MemorySegment units, long unitCount,
                                             MemorySegment values, long count, String expected, String digestFormat) {
        return new TensorPatch(name, byteLength, width, xor ? Kind.SCATTER_ESCAPED_XOR : Kind.SCATTER_ESCAPED, null, units, unitCount, count,
            values, expected, digestFormat);
    }

    /** A whole-tensor patch: {@code values} replaces ({@code xor} false) or is XORed into the tensor. */
    public static TensorPatch dense(String name, int width, boolean xor, MemorySegment values, String expected, String digestFormat) {
        return new TensorPatch(name, values.byteSize(), width, xor ? Kind.DENSE_XOR : Kind.DENSE_SET, null, 0, values, expected, digestFormat);
    }

    /**
     * A whole-tensor xor whose payload stays compressed: {@code frame} is one zstd frame already checked
     * to declare exactly {@code byteLength} bytes and to end at its last byte.
     */
    public static TensorPatch denseXorFrame(String name, long byteLength, byte[] frame, String expected, String digestFormat) {
        return new TensorPatch(name, byteLength, 1, Kind.DENSE_XOR_FRAME, null, 0, MemorySegment.ofArray(frame), expected, digestFormat);
    }

    public String name() {
        return name;
    }

    public long byteLength() {
        return byteLength;
    }

    public Kind kind() {
        return kind;
    }

    public int width() {
        return width;
    }

    /** Number of elements written (whole tensor for dense kinds). */
    public long count() {
        return positions == null && units == null ? byteLength / Math.max(1, width) : count;
    }

    /** The escaped u16 gap stream of an escaped scatter patch (null for other kinds). */
    public MemorySegment gapUnits() {
        return units;
    }

    /** Units in {@link #gapUnits()} (0 for other kinds). */
    public long gapUnitCount() {
        return unitCount;
    }

    public MemorySegment values() {
        return values;
    }

    /** The expected lowercase hex digest of the new tensor bytes, or null. */
    public String expected() {
        return expected;
    }

    public String digestFormat() {
        return digestFormat;
    }

    private boolean escaped() {
        return kind == Kind.SCATTER_ESCAPED || kind == Kind.SCATTER_ESCAPED_XOR;
    }

    private boolean xorScatter() {
        return kind == Kind.SCATTER_XOR || kind == Kind.SCATTER_ESCAPED_XOR;
    }

    /** The u64 positions, decoded (and checked) from the gap stream the first time an escaped patch needs them. */
    private synchronized MemorySegment positions() {
        if (positions == null && units != null) {
            positions = decodeEscaped(units, unitCount, count, byteLength / width, "patch of " + name);
        }
        return positions;
    }

    /**
     * Decodes an escaped u16 gap stream into exactly {@code count} u64 LE positions below {@code limit};
     * a stream that ends inside an escape or yields another count is a {@link DeltaFormatException}.
     */
    public static MemorySegment decodeEscaped(MemorySegment units, long unitCount, long count, long limit, String where) {
        MemorySegment pos = MemorySegment.ofArray(new long[Math.toIntExact(count)]);
        long n;
        try {
            n = Kernels.get().decodeEscapedGaps(units, unitCount, pos, 8, count, limit);
        } catch (IllegalArgumentException e) {
            throw new DeltaFormatException(where + ": malformed gap stream: " + e.getMessage(), e);
        }
        if (n != count) {
            throw new DeltaFormatException(where + ": gap stream holds " + n + " positions, the record declares " + count);
        }
        return pos;
    }

    /**
     * A pass over the tensor in ascending windows: each call of {@link Windows#patch} turns the current
     * bytes of the next window into its new bytes. Close it to release the decoder.
     */
    public Windows windows() {
        return new Windows();
    }

    /** The state of one pass over the tensor (scatter cursor, stream decoder). */
    public final class Windows implements AutoCloseable {
        private long cursor;
        private long done;
        private InputStream stream;
        private byte[] block;

        private Windows() {
        }

        /**
         * Writes into {@code out} the new bytes of the window starting at byte {@code offset} of the
         * tensor (a multiple of the width, following the previous window), given its current bytes in
         * {@code current} (same size; may be the same segment as {@code out}).
         */
        public void patch(MemorySegment current, long offset, MemorySegment out) {
            long len = out.byteSize();
            if (offset != done) {
                throw new IllegalStateException("windows of " + name + " must be contiguous and ascending");
            }
            DeltaKernels kernels = Kernels.get();
            if (current != out) {
                MemorySegment.copy(current, 0, out, 0, len);
            }
            switch (kind) {
                case DENSE_SET -> MemorySegment.copy(values, offset, out, 0, len);
                case DENSE_XOR -> kernels.xorInto(out, values.asSlice(offset, len));
                case DENSE_XOR_FRAME -> xorStream(out, kernels);
                default -> scatterWindow(out, offset, kernels);
            }
            done += len;
        }

        private void xorStream(MemorySegment out, DeltaKernels kernels) {
            try {
                if (stream == null) {
                    stream = new ZstdInputStreamNoFinalizer(new ByteArrayInputStream((byte[]) values.heapBase().orElseThrow()));
                    // a block never exceeds the tensor: a shard of many small tensors would otherwise cost 2 MiB each
                    block = new byte[(int) Math.min(STREAM_BLOCK, byteLength)];
                }
                long len = out.byteSize();
                for (long at = 0; at < len; ) {
                    int want = (int) Math.min(block.length, len - at);
                    int got = stream.readNBytes(block, 0, want);
                    if (got != want) {
                        throw new DeltaFormatException("patch of " + name + ": xor payload ends after " + (done + at + got) + " of " + byteLength + " bytes");
                    }
                    // checked before the last block is written, so a failing block never leaves its window half-patched
                    if (done + at + want == byteLength && stream.read() != -1) {
                        throw new DeltaFormatException("patch of " + name + ": xor payload is longer than the tensor");
                    }
                    kernels.xorInto(out.asSlice(at, want), MemorySegment.ofArray(block).asSlice(0, want));
                    at += want;
                }
            } catch (IOException e) {
                throw new DeltaFormatException("patch of " + name + ": corrupt zstd stream: " + e.getMessage(), e);
            }
        }

        private void scatterWindow(MemorySegment out, long offset, DeltaKernels kernels) {
            MemorySegment positions = positions();
            long first = offset / width;
            long end = (offset + out.byteSize()) / width;
            long k0 = cursor;
            long k1 = k0;
            if (offset + out.byteSize() == byteLength) {
                // the last window takes every remaining position, so there is nothing to scan for
                k1 = count;
            } else {
                while (k1 < count && positions.get(U64, 8 * k1) < end) {
                    k1++;
                }
            }
            long n = k1 - k0;
            if (n > 0 && first == 0) {
                // a window at the tensor's start needs no rebasing: hand the positions to the kernel as they are
                MemorySegment vals = values.asSlice(k0 * width, n * width);
                MemorySegment pos = positions.asSlice(8 * k0, 8 * n);
                if (xorScatter()) {
                    kernels.scatterXor(out, width, pos, 8, vals, n);
                } else {
                    kernels.scatter(out, width, pos, 8, vals, n);
                }
            } else if (n > 0) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment rebased = arena.allocate(8 * n, 8);
                    for (long i = 0; i < n; i++) {
                        rebased.set(U64, 8 * i, positions.get(U64, 8 * (k0 + i)) - first);
                    }
                    MemorySegment vals = values.asSlice(k0 * width, n * width);
                    if (xorScatter()) {
                        kernels.scatterXor(out, width, rebased, 8, vals, n);
                    } else {
                        kernels.scatter(out, width, rebased, 8, vals, n);
                    }
                }
            }
            cursor = k1;
        }

        @Override
        public void close() {
            if (stream != null) {
                try {
                    stream.close();
                } catch (IOException e) {
                    throw new DeltaFormatException("patch of " + name + ": " + e.getMessage(), e);
                }
            }
        }
    }

    /** Bytes per window of the windowed digest pass: small enough to stay in L2 between patch and hash. */
    private static final long DIGEST_WINDOW = 256 << 10;

    /**
     * The digest (in {@link #digestFormat()}) the tensor would have after this patch, computed from
     * its {@code current} bytes without writing them. Scatter patches hashed with xxh3-128 take one
     * fused kernel pass ({@link DeltaKernels#patchedXxh3}); the rest patch cache-sized windows of a
     * private copy and feed them to an incremental digest.
     */
    public String newDigest(MemorySegment current) {
        if (current.byteSize() != byteLength) {
            throw new IllegalArgumentException("patch of " + name + " needs " + byteLength + " bytes, target has " + current.byteSize());
        }
        DeltaKernels kernels = Kernels.get();
        if (kind == Kind.DENSE_SET) {
            return Digests.of(digestFormat, values);
        }
        if ((kind == Kind.SCATTER || kind == Kind.SCATTER_XOR || escaped()) && Digests.XXH3_128.equals(digestFormat)) {
            return kernels.patchedXxh3(current, width, positions(), 8, values, count, xorScatter()).hex();
        }
        Digest d = Digests.newDigest(digestFormat);
        long window = Math.max(width, DIGEST_WINDOW - DIGEST_WINDOW % width);
        try (Arena arena = Arena.ofConfined(); Windows w = windows()) {
            MemorySegment scratch = arena.allocate(Math.max(1, Math.min(window, byteLength)), 64);
            for (long off = 0; off < byteLength; off += window) {
                long n = Math.min(window, byteLength - off);
                MemorySegment out = scratch.asSlice(0, n);
                w.patch(current.asSlice(off, n), off, out);
                d.update(out);
            }
        }
        return d.hex();
    }

    /**
     * Whether {@link #applyAndDigest} can check this patch while writing it: an xxh3-128 digest over a
     * patch whose writes can be undone exactly. A dense replacement is checked on its values before
     * writing instead, and other digest formats take a separate hashing pass ({@link #newDigest}).
     */
    public boolean checkedWhileWriting() {
        return expected != null && Digests.XXH3_128.equals(digestFormat) && kind != Kind.DENSE_SET;
    }

    /**
     * A patch written by {@link #applyAndDigest}.
     *
     * @param digest lowercase hex xxh3-128 of the tensor after the patch
     * @param undo   puts the tensor back to its bytes before the patch, exactly
     */
    public record Written(String digest, Runnable undo) {
    }

    /**
     * Writes the patch into {@code tensor} and hashes the result in the same pass, each block while it
     * is in cache (docs/formats/disk-delta.md §3.4 step 5 allows writing first when the overwritten bytes are
     * kept and restored on failure). Only for {@link #checkedWhileWriting()} patches. If the payload
     * turns out malformed part way, the written part is undone before the exception leaves.
     *
     * @param undoMemory where the overwritten elements are kept (scatter kinds: {@code count * width}
     *                   bytes); it must outlive the returned {@link Written}
     */
    public Written applyAndDigest(MemorySegment tensor, SegmentAllocator undoMemory) {
        if (!checkedWhileWriting()) {
            throw new IllegalStateException("patch of " + name + " is not checked while writing");
        }
        if (tensor.byteSize() != byteLength) {
            throw new IllegalArgumentException("patch of " + name + " needs " + byteLength + " bytes, target has " + tensor.byteSize());
        }
        DeltaKernels kernels = Kernels.get();
        if (escaped()) {
            MemorySegment undo = undoMemory.allocate(Math.max(1, count * width), 8);
            String digest;
            try {
                digest = kernels.scatterEscapedXxh3(tensor, width, units, unitCount, values, count, xorScatter(), undo).hex();
            } catch (IllegalArgumentException e) {
                throw new DeltaFormatException("patch of " + name + ": malformed gap stream: " + e.getMessage(), e);
            }
            return new Written(digest, () -> kernels.scatterEscapedGaps(tensor, width, units, unitCount, undo, count, false));
        }
        if (kind == Kind.SCATTER || kind == Kind.SCATTER_XOR) {
            MemorySegment undo = undoMemory.allocate(Math.max(1, count * width), 8);
            String digest = kernels.scatterXxh3(tensor, width, positions, 8, values, count, kind == Kind.SCATTER_XOR, undo).hex();
            return new Written(digest, () -> kernels.restoreUndo(tensor, width, positions, 8, undo, count));
        }
        // dense xor kinds: xor is its own inverse, so undoing is applying the same payload again
        Xxh3Stream h = kernels.newXxh3Stream();
        // windows small enough that the hash re-reads each one from L2 right after the xor wrote it
        long window = DIGEST_WINDOW;
        long done = 0;
        try (Windows w = windows()) {
            for (long off = 0; off < byteLength; off += window) {
                MemorySegment win = tensor.asSlice(off, Math.min(window, byteLength - off));
                w.patch(win, off, win);
                done = off + win.byteSize();
                h.update(win);
            }
        } catch (RuntimeException e) {
            xorAgain(tensor, done);
            throw e;
        }
        String digest = h.digest().hex();
        return new Written(digest, () -> xorAgain(tensor, byteLength));
    }

    /** Applies the first {@code upTo} bytes of a dense xor payload once more, undoing them. */
    private void xorAgain(MemorySegment tensor, long upTo) {
        try (Windows w = windows()) {
            for (long off = 0; off < upTo; off += STREAM_BLOCK) {
                MemorySegment win = tensor.asSlice(off, Math.min(STREAM_BLOCK, upTo - off));
                w.patch(win, off, win);
            }
        }
    }

    /** Applies the patch to the whole tensor in place. */
    public void applyInPlace(MemorySegment tensor) {
        if (tensor.byteSize() != byteLength) {
            throw new IllegalArgumentException("patch of " + name + " needs " + byteLength + " bytes, target has " + tensor.byteSize());
        }
        DeltaKernels kernels = Kernels.get();
        switch (kind) {
            case DENSE_SET -> MemorySegment.copy(values, 0, tensor, 0, byteLength);
            case DENSE_XOR -> kernels.xorInto(tensor, values);
            case SCATTER -> kernels.scatter(tensor, width, positions, 8, values, count);
            case SCATTER_XOR -> kernels.scatterXor(tensor, width, positions, 8, values, count);
            case SCATTER_ESCAPED, SCATTER_ESCAPED_XOR -> {
                try {
                    kernels.scatterEscapedGaps(tensor, width, units, unitCount, values, count, xorScatter());
                } catch (IllegalArgumentException e) {
                    throw new DeltaFormatException("patch of " + name + ": malformed gap stream: " + e.getMessage(), e);
                }
            }
            case DENSE_XOR_FRAME -> {
                try (Windows w = windows()) {
                    for (long off = 0; off < byteLength; off += STREAM_BLOCK) {
                        MemorySegment win = tensor.asSlice(off, Math.min(STREAM_BLOCK, byteLength - off));
                        w.patch(win, off, win);
                    }
                }
            }
        }
    }
}
