package dev.stitch.kernels;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The C kernels bound through FFM. Downcalls are critical (no thread-state transition, heap
 * segments passed directly), which keeps per-call overhead to a few nanoseconds; every bound the
 * C code relies on is checked in Java before the call.
 */
final class NativeKernels implements DeltaKernels {

    private static final Linker LINKER = Linker.nativeLinker();

    private final String isa;
    /** Address of {@code stitch_zstd_literals_only}, a zstd sequence producer. */
    private final long zstdLiteralsProducer;
    private final MethodHandle countChanged;
    private final MethodHandle diffGather;
    private final MethodHandle diffGatherXxh3;
    private final MethodHandle containsNaN;
    private final MethodHandle maxGap;
    private final MethodHandle encodeGaps;
    private final MethodHandle decodeGaps;
    private final MethodHandle escapedUnits;
    private final MethodHandle encodeEscaped;
    private final MethodHandle decodeEscaped;
    private final MethodHandle splitPlanes;
    private final MethodHandle mergePlanes;
    private final MethodHandle scatter;
    private final MethodHandle escapedSummary;
    private final MethodHandle scatterEscaped;
    private final MethodHandle xorInto;
    private final MethodHandle overwriteBytes;
    private final MethodHandle xxh3;
    private final MethodHandle xxh3Reset;
    private final MethodHandle xxh3Update;
    private final MethodHandle xxh3Digest;
    private final MethodHandle patchedXxh3;
    private final MethodHandle scatterXxh3;
    private final MethodHandle restoreUndo;
    private final MethodHandle scatterEscapedXxh3;
    private final MethodHandle xorBytes;
    private final MethodHandle xorWidened;
    private final MethodHandle streamRead;
    private final MethodHandle streamFill;

    /**
     * ISA levels accepted by {@code -Dstitch.native.isa} on this host's architecture, lowest first;
     * the index is the level {@code stitch_cap_isa} takes (docs/platforms.md).
     */
    static java.util.List<String> isaLevels() {
        return NativeLibrary.platform().endsWith("-aarch64")
            ? java.util.List.of("scalar", "neon", "sve")
            : java.util.List.of("scalar", "avx2", "avx512");
    }

    /**
     * Binds the library behind {@code lookup}, dispatching to at most {@code maxIsa} (one of
     * {@link #isaLevels()}); the best the CPU supports when null.
     */
    NativeKernels(SymbolLookup lookup, String maxIsa) {
        java.util.List<String> levels = isaLevels();
        int level = maxIsa == null ? levels.size() - 1 : levels.indexOf(maxIsa);
        if (level < 0) {
            throw new IllegalArgumentException("unknown ISA '" + maxIsa + "', expected one of " + levels);
        }
        MethodHandle capHandle = bind(lookup, "stitch_cap_isa", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        try {
            MemorySegment name = (MemorySegment) capHandle.invokeExact(level);
            isa = name.reinterpret(64).getString(0);
        } catch (Throwable t) {
            throw new IllegalArgumentException("stitch_cap_isa failed: " + t, t);
        }
        countChanged = bind(lookup, "stitch_count_changed", FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        diffGather = bind(lookup, "stitch_diff_gather", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        diffGatherXxh3 = bind(lookup, "stitch_diff_gather_xxh3", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS));
        containsNaN = bind(lookup, "stitch_contains_nan", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        maxGap = bind(lookup, "stitch_max_gap", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG));
        encodeGaps = bind(lookup, "stitch_encode_gaps", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT));
        decodeGaps = bind(lookup, "stitch_decode_gaps", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_INT));
        escapedUnits = bind(lookup, "stitch_escaped_gap_units", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG));
        encodeEscaped = bind(lookup, "stitch_encode_escaped_gaps", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG));
        decodeEscaped = bind(lookup, "stitch_decode_escaped_gaps", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS));
        splitPlanes = bind(lookup, "stitch_split_planes", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS));
        mergePlanes = bind(lookup, "stitch_merge_planes", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS));
        scatter = bind(lookup, "stitch_scatter", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        escapedSummary = bind(lookup, "stitch_escaped_summary", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        scatterEscaped = bind(lookup, "stitch_scatter_escaped", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT));
        xorInto = bind(lookup, "stitch_xor_into", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
        overwriteBytes = bind(lookup, "stitch_overwrite_bytes", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
        xxh3 = bind(lookup, "stitch_xxh3_128", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        xxh3Reset = bind(lookup, "stitch_xxh3_stream_reset", FunctionDescriptor.ofVoid(ADDRESS));
        xxh3Update = bind(lookup, "stitch_xxh3_stream_update", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG));
        xxh3Digest = bind(lookup, "stitch_xxh3_stream_digest", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        patchedXxh3 = bind(lookup, "stitch_patched_xxh3", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        scatterXxh3 = bind(lookup, "stitch_scatter_xxh3", FunctionDescriptor.of(JAVA_LONG,
            ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS));
        restoreUndo = bind(lookup, "stitch_restore_undo", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        scatterEscapedXxh3 = bind(lookup, "stitch_scatter_escaped_xxh3", FunctionDescriptor.ofVoid(
            ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
        xorBytes = bind(lookup, "stitch_xor_bytes", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
        xorWidened = bind(lookup, "stitch_xor_widened", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT));
        zstdLiteralsProducer = lookup.find("stitch_zstd_literals_only")
                .orElseThrow(() -> new UnsatisfiedLinkError("symbol stitch_zstd_literals_only missing from the stitch library"))
                .address();
        streamRead = bind(lookup, "stitch_read_stream", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG));
        streamFill = bind(lookup, "stitch_fill_stream", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT));
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor fd) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new IllegalArgumentException("symbol " + name + " missing from the library"));
        return LINKER.downcallHandle(symbol, fd, Linker.Option.critical(true));
    }

    /** Downcalls declare no checked exceptions; anything thrown is a bug, rethrown unchecked. */
    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    /** Address of the library's literals-only zstd sequence producer, valid for the life of the process. */
    long zstdLiteralsProducer() {
        return zstdLiteralsProducer;
    }

    @Override
    public String implementation() {
        return "native";
    }

    @Override
    public String isa() {
        return isa;
    }

    @Override
    public long countChanged(MemorySegment old, MemorySegment neu, int width) {
        KernelArgs.pair(old, neu, width);
        try {
            return (long) countChanged.invokeExact(old, neu, old.byteSize(), width);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot) {
        KernelArgs.diffGather(old, neu, width, baseIndex, positions, positionWidth, values, updateSnapshot);
        try {
            return (long) diffGather.invokeExact(old, neu, old.byteSize(), width, baseIndex, positions, positionWidth, values,
                xorValues ? 1 : 0, updateSnapshot ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long diffGatherHashing(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                                  MemorySegment positions, int positionWidth, MemorySegment values,
                                  boolean xorValues, boolean updateSnapshot, Xxh3Stream newBytes) {
        if (!(newBytes instanceof NativeXxh3Stream stream)) {
            return DeltaKernels.super.diffGatherHashing(old, neu, width, baseIndex, positions, positionWidth, values,
                    xorValues, updateSnapshot, newBytes);
        }
        KernelArgs.diffGather(old, neu, width, baseIndex, positions, positionWidth, values, updateSnapshot);
        try {
            return (long) diffGatherXxh3.invokeExact(old, neu, old.byteSize(), width, baseIndex, positions, positionWidth,
                values, xorValues ? 1 : 0, updateSnapshot ? 1 : 0, stream.stateSeg);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int nanKind(Dtype dtype) {
        return switch (dtype) {
            case BF16 -> 1;
            case F16 -> 2;
            case F32 -> 3;
            case F64 -> 4;
            case F8_E4M3 -> 5;
            case F8_E5M2 -> 6;
            case F8_E8M0 -> 7;
            default -> 0;
        };
    }

    @Override
    public boolean containsNaN(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.nanArgs(values, dtype, count);
        int kind = nanKind(dtype);
        if (kind == 0) {
            return false;
        }
        try {
            return (int) containsNaN.invokeExact(values, count, kind) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long maxGap(MemorySegment positions, int positionWidth, long count) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        try {
            return (long) maxGap.invokeExact(positions, positionWidth, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void encodeGaps(MemorySegment positions, int positionWidth, long count, MemorySegment gaps, int gapWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(gaps, "gaps");
        try {
            encodeGaps.invokeExact(positions, positionWidth, count, gaps, gapWidth);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void decodeGaps(MemorySegment gaps, int gapWidth, long count, MemorySegment positions, int positionWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(positions, "positions");
        try {
            decodeGaps.invokeExact(gaps, gapWidth, count, positions, positionWidth);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long escapedGapUnits(MemorySegment positions, int positionWidth, long count) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        try {
            return (long) escapedUnits.invokeExact(positions, positionWidth, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units,
                                  long firstIndex) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.writable(units, "gap units");
        KernelArgs.startsAtOrAfter(positions, positionWidth, count, firstIndex);
        long r;
        try {
            // the kernel checks capacity as it goes, so the positions are read once
            r = (long) encodeEscaped.invokeExact(positions, positionWidth, count, units, units.byteSize() / 2, firstIndex);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r < 0) {
            throw new IllegalArgumentException("gap units: " + units.byteSize() / 2 + " units cannot hold the escaped gaps of "
                    + count + " positions");
        }
        return r;
    }

    @Override
    public long decodeEscapedGaps(MemorySegment units, long unitCount, MemorySegment positions, int positionWidth,
                                  long maxCount, long limit) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.escaped(units, unitCount);
        KernelArgs.holds(positions, maxCount, positionWidth, "positions");
        KernelArgs.writable(positions, "positions");
        long effectiveLimit = positionWidth == 4 ? Math.min(limit, KernelArgs.U32_MAX + 1) : limit;
        long[] detail = new long[1];
        long r;
        try {
            r = (long) decodeEscaped.invokeExact(units, unitCount, positions, positionWidth, maxCount, effectiveLimit,
                MemorySegment.ofArray(detail));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r == -1) {
            throw KernelArgs.truncatedEscape();
        }
        if (r == -2) {
            throw KernelArgs.tooManyPositions(maxCount);
        }
        if (r == -3) {
            throw KernelArgs.positionOutOfRange(detail[0], limit);
        }
        return r;
    }

    @Override
    public void splitPlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        try {
            splitPlanes.invokeExact(src, width, count, dst);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void mergePlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        try {
            mergePlanes.invokeExact(src, width, count, dst);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        scatterImpl(dst, width, positions, positionWidth, values, count, false);
    }

    @Override
    public void scatterXor(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        scatterImpl(dst, width, positions, positionWidth, values, count, true);
    }

    private void scatterImpl(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values,
                             long count, boolean xor) {
        KernelArgs.scatter(dst, width, positions, positionWidth, values, count);
        long limit = dst.byteSize() / width;
        long r;
        try {
            r = (long) scatter.invokeExact(dst, limit, width, positions, positionWidth, values, count, xor ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r < 0) {
            throw KernelArgs.positionOutOfRange(KernelArgs.position(positions, positionWidth, -r - 1), limit);
        }
    }

    @Override
    public long scatterEscapedGaps(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                   MemorySegment values, long count, boolean xor) {
        KernelArgs.width(width);
        KernelArgs.escaped(units, unitCount);
        KernelArgs.holds(values, count, width, "values");
        KernelArgs.writable(dst, "destination");
        long limit = dst.byteSize() / width;
        long[] summary = new long[2];
        try {
            escapedSummary.invokeExact(units, unitCount, MemorySegment.ofArray(summary));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        JavaGapCoding.checkEscapedSummary(units, unitCount, count, limit, summary[0], summary[1]);
        try {
            return (long) scatterEscaped.invokeExact(dst, width, units, unitCount, values, xor ? 1 : 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void xorInto(MemorySegment dst, MemorySegment payload) {
        if (dst.byteSize() < payload.byteSize()) {
            throw new IllegalArgumentException("xor payload of " + payload.byteSize() + " bytes is larger than the destination's " + dst.byteSize());
        }
        KernelArgs.writable(dst, "destination");
        try {
            xorInto.invokeExact(dst, payload, payload.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void overwriteBytes(MemorySegment dst, MemorySegment offsets, MemorySegment bytes, long count) {
        KernelArgs.holds(offsets, count, 4, "offsets");
        KernelArgs.holds(bytes, count, 1, "bytes");
        KernelArgs.writable(dst, "destination");
        long r;
        try {
            r = (long) overwriteBytes.invokeExact(dst, dst.byteSize(), offsets, bytes, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (r < 0) {
            long off = offsets.get(KernelArgs.LE32, (-r - 1) << 2) & KernelArgs.U32_MAX;
            throw new IllegalArgumentException("byte offset " + off + " is outside the tensor's " + dst.byteSize() + " bytes");
        }
    }

    @Override
    public Hash128 xxh3(MemorySegment data) {
        long[] out = new long[2];
        try {
            xxh3.invokeExact(data, data.byteSize(), MemorySegment.ofArray(out));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return new Hash128(out[1], out[0]);
    }

    @Override
    public Xxh3Stream newXxh3Stream() {
        return new NativeXxh3Stream();
    }

    @Override
    public Hash128 patchedXxh3(MemorySegment current, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor) {
        KernelArgs.patched(current, width, positions, positionWidth, values, count);
        long bytes = current.byteSize();
        long[] out = new long[2];
        long r;
        try {
            r = (long) patchedXxh3.invokeExact(current, bytes, width, positions, positionWidth, values, count, xor ? 1 : 0,
                MemorySegment.ofArray(out));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return digestOrOutOfRange(r, out, positions, positionWidth, bytes / width);
    }

    @Override
    public Hash128 scatterXxh3(MemorySegment dst, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor, MemorySegment undo) {
        KernelArgs.undoable(dst, width, positions, positionWidth, values, count, undo);
        long bytes = dst.byteSize();
        long[] out = new long[2];
        long r;
        try {
            r = (long) scatterXxh3.invokeExact(dst, bytes, width, positions, positionWidth, values, count, xor ? 1 : 0, undo,
                MemorySegment.ofArray(out));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return digestOrOutOfRange(r, out, positions, positionWidth, bytes / width);
    }

    @Override
    public Hash128 scatterEscapedXxh3(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                      MemorySegment values, long count, boolean xor, MemorySegment undo) {
        KernelArgs.escapedUndoable(dst, width, units, unitCount, values, count, undo);
        long bytes = dst.byteSize();
        long[] summary = new long[2];
        try {
            escapedSummary.invokeExact(units, unitCount, MemorySegment.ofArray(summary));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        JavaGapCoding.checkEscapedSummary(units, unitCount, count, bytes / width, summary[0], summary[1]);
        long[] out = new long[2];
        try {
            scatterEscapedXxh3.invokeExact(dst, bytes, width, units, unitCount, values, xor ? 1 : 0, undo, MemorySegment.ofArray(out));
        } catch (Throwable t) {
            throw rethrow(t);
        }
        return new Hash128(out[1], out[0]);
    }

    @Override
    public void restoreUndo(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count) {
        KernelArgs.scatter(dst, width, positions, positionWidth, undo, count);
        long limit = dst.byteSize() / width;
        // the C loop trusts positions, so they are range-checked here first
        long max = count == 0 ? 0 : maxPosition(positions, positionWidth, count);
        if (count > 0 && Long.compareUnsigned(max, limit) >= 0) {
            throw KernelArgs.positionOutOfRange(max, limit);
        }
        try {
            restoreUndo.invokeExact(dst, width, positions, positionWidth, undo, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static long maxPosition(MemorySegment positions, int positionWidth, long count) {
        long max = 0;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, max) > 0) {
                max = p;
            }
        }
        return max;
    }

    /** The digest a fused hashing kernel wrote to {@code out}, or the error for its result {@code -(k+1)}: position k out of range. */
    private static Hash128 digestOrOutOfRange(long r, long[] out, MemorySegment positions, int positionWidth, long limit) {
        if (r < 0) {
            throw KernelArgs.positionOutOfRange(KernelArgs.position(positions, positionWidth, -r - 1), limit);
        }
        return new Hash128(out[1], out[0]);
    }

    /** XXH3 state lives in a Java array passed to critical downcalls, so the GC owns it. */
    private final class NativeXxh3Stream implements Xxh3Stream {
        private final long[] state = new long[64];
        private final MemorySegment stateSeg = MemorySegment.ofArray(state);

        NativeXxh3Stream() {
            reset();
        }

        @Override
        public Xxh3Stream update(MemorySegment data) {
            try {
                xxh3Update.invokeExact(stateSeg, data, data.byteSize());
            } catch (Throwable t) {
                throw rethrow(t);
            }
            return this;
        }

        @Override
        public Hash128 digest() {
            long[] out = new long[2];
            try {
                xxh3Digest.invokeExact(stateSeg, MemorySegment.ofArray(out));
            } catch (Throwable t) {
                throw rethrow(t);
            }
            return new Hash128(out[1], out[0]);
        }

        @Override
        public long length() {
            return state[8];
        }

        @Override
        public Xxh3Stream reset() {
            try {
                xxh3Reset.invokeExact(stateSeg);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            return this;
        }
    }

    @Override
    public long xorBytes(MemorySegment data) {
        try {
            return (long) xorBytes.invokeExact(data, data.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long xorWidenedValues(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.widenedArgs(values, dtype, count);
        try {
            return (long) xorWidened.invokeExact(values, count, nanKind(dtype));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public long streamRead(MemorySegment data) {
        try {
            return (long) streamRead.invokeExact(data, data.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    @Override
    public void streamFill(MemorySegment data, byte value) {
        KernelArgs.writable(data, "fill target");
        try {
            streamFill.invokeExact(data, data.byteSize(), (int) value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
