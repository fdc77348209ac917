package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.LE32;
import static dev.stitch.kernels.KernelArgs.LE64;
import static dev.stitch.kernels.KernelArgs.U8;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.MemorySegment;

/**
 * The pure-Java kernels: SWAR over 64-bit little-endian words, so unchanged regions are skipped a
 * word (or four) at a time and only words with a difference are examined lane by lane.
 */
final class JavaKernels implements DeltaKernels {

    /** Whether the Vector API module is in the boot layer (it needs {@code --add-modules jdk.incubator.vector}). */
    static final boolean VECTOR_AVAILABLE = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
        && !"false".equalsIgnoreCase(System.getProperty("stitch.java.vector", "true"));

    /** The Java kernels: Vector API scans when available, else SWAR. */
    static final JavaKernels INSTANCE = new JavaKernels(VECTOR_AVAILABLE);
    /** SWAR only, for tests of that path and platforms without the Vector API. */
    static final JavaKernels SWAR = new JavaKernels(false);

    private final boolean vector;

    private JavaKernels(boolean vector) {
        this.vector = vector;
    }

    @Override
    public String implementation() {
        return "java";
    }

    @Override
    public String isa() {
        return vector ? VectorScan.isa() : "swar";
    }

    // ---- element access ---------------------------------------------------------------------

    static long get(MemorySegment seg, int width, long byteOffset) {
        return switch (width) {
            case 1 -> seg.get(U8, byteOffset) & 0xFFL;
            case 2 -> seg.get(LE16, byteOffset) & 0xFFFFL;
            case 4 -> seg.get(LE32, byteOffset) & 0xFFFF_FFFFL;
            default -> seg.get(LE64, byteOffset);
        };
    }

    static void set(MemorySegment seg, int width, long byteOffset, long value) {
        switch (width) {
            case 1 -> seg.set(U8, byteOffset, (byte) value);
            case 2 -> seg.set(LE16, byteOffset, (short) value);
            case 4 -> seg.set(LE32, byteOffset, (int) value);
            default -> seg.set(LE64, byteOffset, value);
        }
    }

    static long laneMask(int width) {
        return width == 8 ? -1L : (1L << (8 * width)) - 1;
    }

    // ---- diff -------------------------------------------------------------------------------

    @Override
    public long countChanged(MemorySegment old, MemorySegment neu, int width) {
        long n = KernelArgs.pair(old, neu, width);
        long bytes = n * width;
        long count = 0;
        long start = 0;
        if (vector) {
            count = VectorScan.countChanged(old, neu, width, bytes);
            start = VectorScan.vectorBytes(bytes) >>> 3;
        }
        long words = bytes >>> 3;
        long lowBits = lowLaneBits(width);
        for (long w = start; w < words; w++) {
            long x = old.get(LE64, w << 3) ^ neu.get(LE64, w << 3);
            if (x != 0) {
                count += Long.bitCount(foldLanes(x, width) & lowBits);
            }
        }
        for (long off = words << 3; off < bytes; off += width) {
            if (get(old, width, off) != get(neu, width, off)) {
                count++;
            }
        }
        return count;
    }

    /** The lowest bit of every {@code width}-byte lane of a word. */
    private static long lowLaneBits(int width) {
        return switch (width) {
            case 1 -> 0x0101_0101_0101_0101L;
            case 2 -> 0x0001_0001_0001_0001L;
            case 4 -> 0x0000_0001_0000_0001L;
            default -> 1L;
        };
    }

    /** ORs every lane's bits down into its lowest bit (other bits are garbage, masked by the caller). */
    private static long foldLanes(long x, int width) {
        for (int shift = 4 * width; shift >= 1; shift >>>= 1) {
            x |= x >>> shift;
        }
        return x;
    }

    @Override
    public long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot) {
        KernelArgs.diffGather(old, neu, width, baseIndex, positions, positionWidth, values, updateSnapshot);
        long bytes = old.byteSize();
        long words = bytes >>> 3;
        int lanes = 8 / width;
        int laneBits = 8 * width;
        long mask = laneMask(width);
        long k = 0;
        long w = 0;
        if (vector) {
            k = VectorScan.diffGather(old, neu, width, baseIndex, bytes, positions, positionWidth, values, xorValues, updateSnapshot);
            w = VectorScan.vectorBytes(bytes) >>> 3;
        }
        // Four words at a time: most 32-byte blocks of a sparse update hold no change at all.
        for (; w + 4 <= words; w += 4) {
            long off = w << 3;
            long d = (old.get(LE64, off) ^ neu.get(LE64, off))
                | (old.get(LE64, off + 8) ^ neu.get(LE64, off + 8))
                | (old.get(LE64, off + 16) ^ neu.get(LE64, off + 16))
                | (old.get(LE64, off + 24) ^ neu.get(LE64, off + 24));
            if (d == 0) {
                continue;
            }
            for (int j = 0; j < 4; j++) {
                k = gatherWord(old, neu, off + 8L * j, width, lanes, laneBits, mask, baseIndex + ((w + j) * lanes),
                    positions, positionWidth, values, k, xorValues, updateSnapshot);
            }
        }
        for (; w < words; w++) {
            k = gatherWord(old, neu, w << 3, width, lanes, laneBits, mask, baseIndex + w * lanes,
                positions, positionWidth, values, k, xorValues, updateSnapshot);
        }
        for (long off = words << 3; off < bytes; off += width) {
            long o = get(old, width, off);
            long nv = get(neu, width, off);
            if (o != nv) {
                writePosition(positions, positionWidth, k, baseIndex + off / width);
                set(values, width, k * width, xorValues ? o ^ nv : nv);
                if (updateSnapshot) {
                    set(old, width, off, nv);
                }
                k++;
            }
        }
        return k;
    }

    private static long gatherWord(MemorySegment old, MemorySegment neu, long off, int width, int lanes, int laneBits, long mask,
                                   long firstIndex, MemorySegment positions, int positionWidth, MemorySegment values,
                                   long k, boolean xorValues, boolean updateSnapshot) {
        long o = old.get(LE64, off);
        long nv = neu.get(LE64, off);
        long x = o ^ nv;
        if (x == 0) {
            return k;
        }
        for (int j = 0; j < lanes; j++) {
            long d = (x >>> (laneBits * j)) & mask;
            if (d != 0) {
                writePosition(positions, positionWidth, k, firstIndex + j);
                set(values, width, k * width, xorValues ? d : (nv >>> (laneBits * j)) & mask);
                k++;
            }
        }
        if (updateSnapshot) {
            old.set(LE64, off, nv);
        }
        return k;
    }

    private static void writePosition(MemorySegment positions, int positionWidth, long k, long index) {
        if (positionWidth == 4) {
            positions.set(LE32, k << 2, (int) index);
        } else {
            positions.set(LE64, k << 3, index);
        }
    }

    @Override
    public boolean containsNaN(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.nanArgs(values, dtype, count);
        if (!dtype.isFloatingPoint()) {
            return false;
        }
        for (long i = 0; i < count; i++) {
            if (isNaN(dtype, get(values, dtype.width(), i * dtype.width()))) {
                return true;
            }
        }
        return false;
    }

    static boolean isNaN(Dtype dtype, long bits) {
        return switch (dtype) {
            case BF16 -> (bits & 0x7FFF) > 0x7F80;
            case F16 -> (bits & 0x7FFF) > 0x7C00;
            case F32 -> (bits & 0x7FFF_FFFFL) > 0x7F80_0000L;
            case F64 -> (bits & Long.MAX_VALUE) > 0x7FF0_0000_0000_0000L;
            case F8_E4M3 -> (bits & 0x7F) == 0x7F;
            case F8_E5M2 -> (bits & 0x7F) > 0x7C;
            case F8_E8M0 -> (bits & 0xFF) == 0xFF;
            default -> false;
        };
    }

    // ---- gap codecs -------------------------------------------------------------------------

    @Override
    public long maxGap(MemorySegment positions, int positionWidth, long count) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        long prev = -1;
        long max = 0;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            long g = p - prev - 1;
            if (Long.compareUnsigned(g, max) > 0) {
                max = g;
            }
            prev = p;
        }
        return max;
    }

    @Override
    public void encodeGaps(MemorySegment positions, int positionWidth, long count, MemorySegment gaps, int gapWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(gaps, "gaps");
        long prev = -1;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            set(gaps, gapWidth, k * gapWidth, p - prev - 1);
            prev = p;
        }
    }

    @Override
    public void decodeGaps(MemorySegment gaps, int gapWidth, long count, MemorySegment positions, int positionWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(positions, "positions");
        long prev = -1;
        for (long k = 0; k < count; k++) {
            prev += get(gaps, gapWidth, k * gapWidth) + 1;
            writePosition(positions, positionWidth, k, prev);
        }
    }

    @Override
    public long escapedGapUnits(MemorySegment positions, int positionWidth, long count) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        return escapedUnits(positions, positionWidth, count, 0);
    }

    /** Units of the escaped gap stream of {@code count} positions whose first gap counts from {@code firstIndex}. */
    private static long escapedUnits(MemorySegment positions, int positionWidth, long count, long firstIndex) {
        long prev = firstIndex - 1;
        long units = 0;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            units += Long.divideUnsigned(p - prev - 1, 65535) + 1;
            prev = p;
        }
        return units;
    }

    @Override
    public long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units,
                                  long firstIndex) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.startsAtOrAfter(positions, positionWidth, count, firstIndex);
        KernelArgs.holds(units, escapedUnits(positions, positionWidth, count, firstIndex), 2, "gap units");
        KernelArgs.writable(units, "gap units");
        long prev = firstIndex - 1;
        long u = 0;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            long g = p - prev - 1;
            long escapes = Long.divideUnsigned(g, 65535);
            for (long e = 0; e < escapes; e++) {
                units.set(LE16, (u++) << 1, (short) 0xFFFF);
            }
            units.set(LE16, (u++) << 1, (short) Long.remainderUnsigned(g, 65535));
            prev = p;
        }
        return u;
    }

    @Override
    public long decodeEscapedGaps(MemorySegment units, long unitCount, MemorySegment positions, int positionWidth,
                                  long maxCount, long limit) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.escaped(units, unitCount);
        KernelArgs.holds(positions, maxCount, positionWidth, "positions");
        KernelArgs.writable(positions, "positions");
        long effectiveLimit = positionWidth == 4 ? Math.min(limit, KernelArgs.U32_MAX + 1) : limit;
        long prev = -1;
        long gap = 0;
        long k = 0;
        for (long u = 0; u < unitCount; u++) {
            int unit = units.get(LE16, u << 1) & 0xFFFF;
            gap += unit;
            if (unit == 0xFFFF) {
                continue;
            }
            long p = prev + gap + 1;
            if (k >= maxCount) {
                throw KernelArgs.tooManyPositions(maxCount);
            }
            if (p >= effectiveLimit || p < 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
            writePosition(positions, positionWidth, k++, p);
            prev = p;
            gap = 0;
        }
        if (gap != 0) {
            throw KernelArgs.truncatedEscape();
        }
        return k;
    }

    // ---- byte planes ------------------------------------------------------------------------

    @Override
    public void splitPlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        if (width == 2) {
            for (long i = 0; i < count; i++) {
                short v = src.get(LE16, i << 1);
                dst.set(U8, i, (byte) v);
                dst.set(U8, count + i, (byte) (v >>> 8));
            }
            return;
        }
        for (long i = 0; i < count; i++) {
            long v = get(src, width, i * width);
            for (int b = 0; b < width; b++) {
                dst.set(U8, b * count + i, (byte) (v >>> (8 * b)));
            }
        }
    }

    @Override
    public void mergePlanes(MemorySegment src, int width, long count, MemorySegment dst) {
        KernelArgs.planes(src, width, count, dst);
        if (width == 2) {
            for (long i = 0; i < count; i++) {
                int lo = src.get(U8, i) & 0xFF;
                int hi = src.get(U8, count + i) & 0xFF;
                dst.set(LE16, i << 1, (short) (lo | (hi << 8)));
            }
            return;
        }
        for (long i = 0; i < count; i++) {
            long v = 0;
            for (int b = 0; b < width; b++) {
                v |= (src.get(U8, b * count + i) & 0xFFL) << (8 * b);
            }
            set(dst, width, i * width, v);
        }
    }

    // ---- apply ------------------------------------------------------------------------------

    @Override
    public void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        KernelArgs.scatter(dst, width, positions, positionWidth, values, count);
        long limit = dst.byteSize() / width;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, limit) >= 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
            set(dst, width, p * width, get(values, width, k * width));
        }
    }

    @Override
    public void scatterXor(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values, long count) {
        KernelArgs.scatter(dst, width, positions, positionWidth, values, count);
        long limit = dst.byteSize() / width;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, limit) >= 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
            long off = p * width;
            set(dst, width, off, get(dst, width, off) ^ get(values, width, k * width));
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
        validateEscaped(units, unitCount, count, limit);
        long prev = -1;
        long gap = 0;
        long k = 0;
        for (long u = 0; u < unitCount; u++) {
            int unit = units.get(LE16, u << 1) & 0xFFFF;
            gap += unit;
            if (unit == 0xFFFF) {
                continue;
            }
            prev += gap + 1;
            gap = 0;
            long off = prev * width;
            long v = get(values, width, k * width);
            set(dst, width, off, xor ? get(dst, width, off) ^ v : v);
            k++;
        }
        return k;
    }

    /**
     * A first pass over the (small) gap stream, so a malformed stream never writes a byte. Positions
     * only grow, so the last one bounds them all: it is the sum of all unit values plus the number
     * of non-escape units, minus one.
     */
    static void validateEscaped(MemorySegment units, long unitCount, long count, long limit) {
        long sum = 0;
        long positions = 0;
        for (long u = 0; u < unitCount; u++) {
            int unit = units.get(LE16, u << 1) & 0xFFFF;
            sum += unit;
            positions += unit != 0xFFFF ? 1 : 0;
        }
        checkEscapedSummary(units, unitCount, count, limit, sum, positions);
    }

    /** Turns the summary of a gap stream into the same error both implementations raise. */
    static void checkEscapedSummary(MemorySegment units, long unitCount, long count, long limit, long sum, long positions) {
        if (unitCount > 0 && (units.get(LE16, (unitCount - 1) << 1) & 0xFFFF) == 0xFFFF) {
            throw KernelArgs.truncatedEscape();
        }
        if (positions > count) {
            throw KernelArgs.tooManyPositions(count);
        }
        if (positions != count) {
            throw KernelArgs.countMismatch(positions, count);
        }
        long last = sum + positions - 1;
        if (positions > 0 && last >= limit) {
            throw KernelArgs.positionOutOfRange(last, limit);
        }
    }

    @Override
    public void xorInto(MemorySegment dst, MemorySegment payload) {
        long bytes = payload.byteSize();
        if (dst.byteSize() < bytes) {
            throw new IllegalArgumentException("xor payload of " + bytes + " bytes is larger than the destination's " + dst.byteSize());
        }
        KernelArgs.writable(dst, "destination");
        long words = bytes >>> 3;
        for (long w = 0; w < words; w++) {
            long off = w << 3;
            dst.set(LE64, off, dst.get(LE64, off) ^ payload.get(LE64, off));
        }
        for (long off = words << 3; off < bytes; off++) {
            dst.set(U8, off, (byte) (dst.get(U8, off) ^ payload.get(U8, off)));
        }
    }

    @Override
    public void overwriteBytes(MemorySegment dst, MemorySegment offsets, MemorySegment bytes, long count) {
        KernelArgs.holds(offsets, count, 4, "offsets");
        KernelArgs.holds(bytes, count, 1, "bytes");
        KernelArgs.writable(dst, "destination");
        long limit = dst.byteSize();
        for (long k = 0; k < count; k++) {
            long off = offsets.get(LE32, k << 2) & 0xFFFF_FFFFL;
            if (off >= limit) {
                throw new IllegalArgumentException("byte offset " + off + " is outside the tensor's " + limit + " bytes");
            }
        }
        for (long k = 0; k < count; k++) {
            dst.set(U8, offsets.get(LE32, k << 2) & 0xFFFF_FFFFL, bytes.get(U8, k));
        }
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

    /** Same block size as the C kernel, so both read {@code current} in the same order. */
    private static final int PATCH_BLOCK = 16 << 10;

    @Override
    public Hash128 patchedXxh3(MemorySegment current, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor) {
        KernelArgs.patched(current, width, positions, positionWidth, values, count);
        long bytes = current.byteSize();
        long limit = bytes / width;
        MemorySegment block = MemorySegment.ofArray(new byte[PATCH_BLOCK]);
        Xxh3.Hasher h = Xxh3.newHasher();
        long k = 0;
        for (long off = 0; off < bytes; off += PATCH_BLOCK) {
            long n = Math.min(PATCH_BLOCK, bytes - off);
            MemorySegment.copy(current, off, block, 0, n);
            long first = off / width;
            long end = (off + n) / width;
            for (; k < count; k++) {
                long p = KernelArgs.position(positions, positionWidth, k);
                if (Long.compareUnsigned(p, end) >= 0) {
                    break;
                }
                if (p >= first) {
                    long at = (p - first) * width;
                    long v = get(values, width, k * width);
                    set(block, width, at, xor ? get(block, width, at) ^ v : v);
                }
            }
            h.update(block.asSlice(0, n));
        }
        if (k < count) {
            throw KernelArgs.positionOutOfRange(KernelArgs.position(positions, positionWidth, k), limit);
        }
        return h.digest();
    }

    @Override
    public Hash128 scatterXxh3(MemorySegment dst, int width, MemorySegment positions, int positionWidth,
                               MemorySegment values, long count, boolean xor, MemorySegment undo) {
        KernelArgs.undoable(dst, width, positions, positionWidth, values, count, undo);
        long bytes = dst.byteSize();
        Xxh3.Hasher h = Xxh3.newHasher();
        long k = 0;
        for (long off = 0; off < bytes; off += PATCH_BLOCK) {
            long n = Math.min(PATCH_BLOCK, bytes - off);
            long end = (off + n) / width;
            for (; k < count; k++) {
                long p = KernelArgs.position(positions, positionWidth, k);
                if (Long.compareUnsigned(p, end) >= 0) {
                    break;
                }
                long at = p * width;
                long old = get(dst, width, at);
                long v = get(values, width, k * width);
                set(undo, width, k * width, old);
                set(dst, width, at, xor ? old ^ v : v);
            }
            h.update(dst.asSlice(off, n));
        }
        if (k < count) {
            long bad = KernelArgs.position(positions, positionWidth, k);
            restoreUndo(dst, width, positions, positionWidth, undo, k);
            throw KernelArgs.positionOutOfRange(bad, bytes / width);
        }
        return h.digest();
    }

    @Override
    public Hash128 scatterEscapedXxh3(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                      MemorySegment values, long count, boolean xor, MemorySegment undo) {
        KernelArgs.escapedUndoable(dst, width, units, unitCount, values, count, undo);
        // the fallback rebuilds positions first (which checks the stream) and reuses the fused positional pass
        MemorySegment positions = MemorySegment.ofArray(new long[Math.toIntExact(count)]);
        long decoded = decodeEscapedGaps(units, unitCount, positions, 8, count, dst.byteSize() / width);
        if (decoded != count) {
            throw KernelArgs.countMismatch(decoded, count);
        }
        return scatterXxh3(dst, width, positions, 8, values, count, xor, undo);
    }

    @Override
    public void restoreUndo(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment undo, long count) {
        KernelArgs.scatter(dst, width, positions, positionWidth, undo, count);
        long limit = dst.byteSize() / width;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, limit) >= 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
        }
        for (long k = count - 1; k >= 0; k--) {
            set(dst, width, KernelArgs.position(positions, positionWidth, k) * width, get(undo, width, k * width));
        }
    }

    @Override
    public long xorBytes(MemorySegment data) {
        long bytes = data.byteSize();
        long words = bytes >>> 3;
        long x = 0;
        for (long w = 0; w < words; w++) {
            x ^= data.get(LE64, w << 3);
        }
        for (long off = words << 3; off < bytes; off++) {
            x ^= data.get(U8, off) & 0xFFL;
        }
        x ^= x >>> 32;
        x ^= x >>> 16;
        x ^= x >>> 8;
        return x & 0xFF;
    }

    @Override
    public long xorWidenedValues(MemorySegment values, Dtype dtype, long count) {
        KernelArgs.widenedArgs(values, dtype, count);
        long x = 0;
        switch (dtype) {
            case BF16 -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF32((values.get(LE16, i << 1) & 0xFFFF) << 16);
                }
            }
            case F16 -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF16(values.get(LE16, i << 1));
                }
            }
            default -> {
                for (long i = 0; i < count; i++) {
                    x ^= widenF32(values.get(LE32, i << 2));
                }
            }
        }
        return x;
    }

    /** binary32 bits to binary64 bits; a NaN keeps its payload and gets the quiet bit, as x86 does. */
    static long widenF32(int bits) {
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return ((long) (bits >>> 31) << 63) | 0x7FF8_0000_0000_0000L | ((long) (bits & 0x7F_FFFF) << 29);
        }
        return Double.doubleToRawLongBits(Float.intBitsToFloat(bits));
    }

    /** binary16 bits to binary64 bits, NaN handled like {@link #widenF32}. */
    static long widenF16(short bits) {
        int b = bits & 0xFFFF;
        if ((b & 0x7FFF) > 0x7C00) {
            return ((long) (b >>> 15) << 63) | 0x7FF8_0000_0000_0000L | ((long) (b & 0x3FF) << 42);
        }
        return Double.doubleToRawLongBits(Float.float16ToFloat(bits));
    }

    // ---- memory-traffic floor ---------------------------------------------------------------

    @Override
    public long streamRead(MemorySegment data) {
        long bytes = data.byteSize();
        long words = bytes >>> 3;
        long a = 0;
        long b = 0;
        long w = 0;
        if (vector) {
            a = VectorScan.streamRead(data, bytes);
            w = words;
        }
        for (; w + 2 <= words; w += 2) {
            a ^= data.get(LE64, w << 3);
            b ^= data.get(LE64, (w + 1) << 3);
        }
        for (; w < words; w++) {
            a ^= data.get(LE64, w << 3);
        }
        for (long off = words << 3; off < bytes; off++) {
            b ^= data.get(U8, off) & 0xFFL;
        }
        return a ^ b;
    }

    @Override
    public void streamFill(MemorySegment data, byte value) {
        KernelArgs.writable(data, "fill target");
        data.fill(value);
    }
}
