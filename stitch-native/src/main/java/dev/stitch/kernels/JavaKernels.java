package dev.stitch.kernels;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;

/**
 * The pure-Java kernels, for hosts without a bundled native library (docs/platforms.md): this
 * class chooses how the diff scans and hands every kernel to the class that holds its role
 * (SwarDiff, VectorScan, VectorCompressDiff, JavaGapCoding, JavaPlanes, JavaApply,
 * JavaApplyHashing, JavaValueChecks). Bit-identical to the C kernels (one shared contract test and
 * the vector harness of src/test/c).
 */
final class JavaKernels implements DeltaKernels {

    /** Whether the Vector API module is in the boot layer (it needs {@code --add-modules jdk.incubator.vector}). */
    static final boolean VECTOR_AVAILABLE = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
        && !"false".equalsIgnoreCase(System.getProperty("stitch.java.vector", "true"));

    /** How the diff finds changed elements. */
    enum DiffPath {
        /** Branch-free compress on 512-bit vectors for 2- and 4-byte elements in native memory, the per-bit scan for the rest. */
        COMPRESS,
        /** One vector compare per line, then a visit of each set bit. */
        VECTOR_SCAN,
        /** 64-bit words, no Vector API. */
        SWAR
    }

    /** The Java kernels: the fastest diff this JVM compiles well. */
    static final JavaKernels INSTANCE = new JavaKernels(bestDiffPath());
    /** SWAR only, for tests of that path and platforms without the Vector API. */
    static final JavaKernels SWAR = new JavaKernels(DiffPath.SWAR);
    /** The Vector API per-bit scan even where compress is faster, for tests of that path. */
    static final JavaKernels VECTOR_SCAN = new JavaKernels(VECTOR_AVAILABLE ? DiffPath.VECTOR_SCAN : DiffPath.SWAR);

    private final DiffPath diffPath;
    private final boolean vector;

    private JavaKernels(DiffPath diffPath) {
        this.diffPath = diffPath;
        this.vector = diffPath != DiffPath.SWAR;
    }

    private static DiffPath bestDiffPath() {
        if (!VECTOR_AVAILABLE) {
            return DiffPath.SWAR;
        }
        return VectorCompressDiff.supported() ? DiffPath.COMPRESS : DiffPath.VECTOR_SCAN;
    }

    @Override
    public String implementation() {
        return "java";
    }

    @Override
    public String isa() {
        return switch (diffPath) {
            case COMPRESS -> VectorScan.isa() + "-compress";
            case VECTOR_SCAN -> VectorScan.isa();
            case SWAR -> "swar";
        };
    }

    // ---- diff -------------------------------------------------------------------------------

    @Override
    public long countChanged(MemorySegment old, MemorySegment neu, int width) {
        long bytes = KernelArgs.pair(old, neu, width) * width;
        long count = 0;
        long from = 0;
        if (vector) {
            count = VectorScan.countChanged(old, neu, width, bytes);
            from = VectorScan.vectorBytes(bytes);
        }
        return count + SwarDiff.countChanged(old, neu, width, from, bytes);
    }

    @Override
    public long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot) {
        KernelArgs.diffGather(old, neu, width, baseIndex, positions, positionWidth, values, updateSnapshot);
        long bytes = old.byteSize();
        long k = 0;
        long from = 0;
        if (diffPath == DiffPath.COMPRESS && VectorCompressDiff.handles(old, neu, positions, values, width, positionWidth)) {
            k = VectorCompressDiff.diffGather(old, neu, width, baseIndex, bytes, positions, values, xorValues, updateSnapshot);
            from = VectorCompressDiff.coveredBytes(bytes);
        } else if (vector) {
            k = VectorScan.diffGather(old, neu, width, baseIndex, bytes, positions, positionWidth, values, xorValues, updateSnapshot);
            from = VectorScan.vectorBytes(bytes);
        }
        return SwarDiff.diffGather(old, neu, width, baseIndex, from, bytes, positions, positionWidth, values, xorValues,
            updateSnapshot, k);
    }

    @Override
    public boolean containsNaN(MemorySegment values, Dtype dtype, long count) {
        return JavaValueChecks.containsNaN(values, dtype, count);
    }

    // ---- gap codecs -------------------------------------------------------------------------

    @Override
    public long maxGap(MemorySegment positions, int positionWidth, long count) {
        return JavaGapCoding.maxGap(positions, positionWidth, count);
    }

    @Override
    public void encodeGaps(MemorySegment positions, int positionWidth, long count, MemorySegment gaps, int gapWidth) {
        JavaGapCoding.encodeGaps(positions, positionWidth, count, gaps, gapWidth);
    }

    @Override
    public void decodeGaps(MemorySegment gaps, int gapWidth, long count, MemorySegment positions, int positionWidth) {
        JavaGapCoding.decodeGaps(gaps, gapWidth, count, positions, positionWidth);
    }

    @Override
    public long escapedGapUnits(MemorySegment positions, int positionWidth, long count) {
        return JavaGapCoding.escapedGapUnits(positions, positionWidth, count);
    }

    @Override
    public long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units, long firstIndex) {
        return JavaGapCoding.encodeEscapedGaps(positions, positionWidth, count, units, firstIndex);
    }

    @Override
    public long decodeEscapedGaps(MemorySegment units, long unitCount, MemorySegment positions, int positionWidth,
                                  long maxCount, long limit) {
        return JavaGapCoding.decodeEscapedGaps(units, unitCount, positions, positionWidth, maxCount, limit);
    }

    // ---- byte planes ------------------------------------------------------------------------

    @Override
    public void splitPlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        JavaPlanes.splitPlanes(src, width, count, dst);
    }

    @Override
    public void mergePlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        JavaPlanes.mergePlanes(src, width, count, dst);
    }

    // ---- apply ------------------------------------------------------------------------------

    @Override
    public void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        JavaApply.scatter(dst, width, positions, positionWidth, values, count, false);
    }

    @Override
    public void scatterXor(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        JavaApply.scatter(dst, width, positions, positionWidth, values, count, true);
    }

    @Override
    public long scatterEscapedGaps(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                   MemorySegment values, long count, boolean xor) {
        return JavaApply.scatterEscapedGaps(dst, width, units, unitCount, values, count, xor, vector);
    }

    @Override
    public void xorInto(MemorySegment dst, MemorySegment payload) {
        JavaApply.xorInto(dst, payload, vector);
    }

    @Override
    public void overwriteBytes(MemorySegment dst, MemorySegment offsets, MemorySegment bytes, long count) {
        JavaApply.overwriteBytes(dst, offsets, bytes, count);
    }

    // ---- checksums --------------------------------------------------------------------------

    @Override
    public Hash128 xxh3(MemorySegment data) {
        return Xxh3.hash128(data);
    }

    @Override
    public Xxh3Stream newXxh3Stream() {
        return Xxh3.newHasher();
    }

    @Override
    public Hash128 patchedXxh3(MemorySegment current, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor) {
        return JavaApplyHashing.patchedXxh3(current, width, positions, positionWidth, values, count, xor);
    }

    @Override
    public Hash128 scatterXxh3(MemorySegment dst, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor, MemorySegment undo) {
        return JavaApplyHashing.scatterXxh3(dst, width, positions, positionWidth, values, count, xor, undo);
    }

    @Override
    public Hash128 scatterEscapedXxh3(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                      MemorySegment values, long count, boolean xor, MemorySegment undo) {
        return JavaApplyHashing.scatterEscapedXxh3(dst, width, units, unitCount, values, count, xor, undo, vector);
    }

    @Override
    public void restoreUndo(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count) {
        JavaApplyHashing.restoreUndo(dst, width, positions, positionWidth, undo, count);
    }

    @Override
    public long xorBytes(MemorySegment data) {
        return JavaValueChecks.xorBytes(data);
    }

    @Override
    public long xorWidenedValues(MemorySegment values, Dtype dtype, long count) {
        return JavaValueChecks.xorWidenedValues(values, dtype, count);
    }

    // ---- memory-traffic floor ---------------------------------------------------------------

    @Override
    public long streamRead(MemorySegment data) {
        long bytes = data.byteSize();
        long x = 0;
        long off = 0;
        if (vector) {
            x = VectorScan.streamRead(data, bytes);
            off = VectorScan.streamBytes(bytes);
        }
        for (; off + 8 <= bytes; off += 8) {
            x ^= data.get(KernelArgs.LE64, off);
        }
        for (; off < bytes; off++) {
            x ^= data.get(KernelArgs.U8, off) & 0xFFL;
        }
        return x;
    }

    @Override
    public void streamFill(MemorySegment data, byte value) {
        KernelArgs.writable(data, "fill target");
        data.fill(value);
    }
}
