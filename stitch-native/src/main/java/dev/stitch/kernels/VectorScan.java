package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.LE32;
import static dev.stitch.kernels.KernelArgs.LE64;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API scans for the Java kernels: one byte-wise compare per vector gives a bit per byte,
 * folded to a bit per element with {@link Long#compress} (PEXT on x86), then only set bits are
 * visited (the diff where {@link VectorCompressDiff} does not apply); the change count; the summary
 * of an escaped gap stream; and the streaming read. Loaded only when the {@code jdk.incubator.vector}
 * module is present.
 */
final class VectorScan {

    /** At most 64 byte lanes, so a whole mask fits one long. */
    private static final VectorSpecies<Byte> BYTES = ByteVector.SPECIES_PREFERRED.length() <= 64
        ? ByteVector.SPECIES_PREFERRED : ByteVector.SPECIES_512;
    private static final VectorSpecies<Long> LONGS = LongVector.SPECIES_PREFERRED.vectorByteSize() <= 64
        ? LongVector.SPECIES_PREFERRED : LongVector.SPECIES_512;
    private static final int VB = BYTES.vectorByteSize();

    private VectorScan() {
    }

    static String isa() {
        return "vector-api-" + (VB * 8);
    }

    /** Bit j set when element j (of {@code width} bytes) has any differing byte. */
    private static long elementBits(long byteBits, int width) {
        return switch (width) {
            case 1 -> byteBits;
            case 2 -> Long.compress(byteBits | (byteBits >>> 1), 0x5555_5555_5555_5555L);
            case 4 -> Long.compress(byteBits | (byteBits >>> 1) | (byteBits >>> 2) | (byteBits >>> 3), 0x1111_1111_1111_1111L);
            default -> Long.compress(byteBits | (byteBits >>> 1) | (byteBits >>> 2) | (byteBits >>> 3)
                | (byteBits >>> 4) | (byteBits >>> 5) | (byteBits >>> 6) | (byteBits >>> 7), 0x0101_0101_0101_0101L);
        };
    }

    /** Counts changes within the whole vectors of the input; the caller handles the bytes past {@link #vectorBytes}. */
    static long countChanged(MemorySegment old, MemorySegment neu, int width, long bytes) {
        long c = 0;
        for (long off = 0; off + VB <= bytes; off += VB) {
            ByteVector o = ByteVector.fromMemorySegment(BYTES, old, off, ByteOrder.LITTLE_ENDIAN);
            ByteVector n = ByteVector.fromMemorySegment(BYTES, neu, off, ByteOrder.LITTLE_ENDIAN);
            VectorMask<Byte> m = o.compare(VectorOperators.NE, n);
            if (m.anyTrue()) {
                c += Long.bitCount(elementBits(m.toLong(), width));
            }
        }
        return c;
    }

    /** Bytes covered by whole vectors. */
    static long vectorBytes(long bytes) {
        return bytes - bytes % VB;
    }

    /** The fused diff over the whole vectors of the input; returns the number of changes written from slot 0. */
    static long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex, long bytes,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot) {
        long k = 0;
        int shift = Integer.numberOfTrailingZeros(width);
        for (long off = 0; off + VB <= bytes; off += VB) {
            ByteVector o = ByteVector.fromMemorySegment(BYTES, old, off, ByteOrder.LITTLE_ENDIAN);
            ByteVector n = ByteVector.fromMemorySegment(BYTES, neu, off, ByteOrder.LITTLE_ENDIAN);
            VectorMask<Byte> m = o.compare(VectorOperators.NE, n);
            if (!m.anyTrue()) {
                continue;
            }
            long bits = elementBits(m.toLong(), width);
            long first = baseIndex + (off >>> shift);
            if (width == 2 && positionWidth == 4) {
                // The bf16/f16 case dominates real checkpoints: keep it free of per-element switches.
                while (bits != 0) {
                    int j = Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                    long e = off + ((long) j << 1);
                    short nv = neu.get(LE16, e);
                    positions.set(LE32, k << 2, (int) (first + j));
                    values.set(LE16, k << 1, xorValues ? (short) (nv ^ old.get(LE16, e)) : nv);
                    k++;
                }
            } else {
                while (bits != 0) {
                    int j = Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                    long e = off + ((long) j << shift);
                    long nv = ElementAccess.get(neu, width, e);
                    if (positionWidth == 4) {
                        positions.set(LE32, k << 2, (int) (first + j));
                    } else {
                        positions.set(LE64, k << 3, first + j);
                    }
                    ElementAccess.set(values, width, k << shift, xorValues ? nv ^ ElementAccess.get(old, width, e) : nv);
                    k++;
                }
            }
            if (updateSnapshot) {
                n.intoMemorySegment(old, off, ByteOrder.LITTLE_ENDIAN);
            }
        }
        return k;
    }

    /** XOR of all whole 64-bit words of the vector-covered prefix. */
    static long streamRead(MemorySegment data, long bytes) {
        int lb = LONGS.vectorByteSize();
        LongVector a = LongVector.zero(LONGS);
        LongVector b = LongVector.zero(LONGS);
        long off = 0;
        for (; off + 2L * lb <= bytes; off += 2L * lb) {
            a = a.lanewise(VectorOperators.XOR, LongVector.fromMemorySegment(LONGS, data, off, ByteOrder.LITTLE_ENDIAN));
            b = b.lanewise(VectorOperators.XOR, LongVector.fromMemorySegment(LONGS, data, off + lb, ByteOrder.LITTLE_ENDIAN));
        }
        long x = a.lanewise(VectorOperators.XOR, b).reduceLanes(VectorOperators.XOR);
        for (; off + 8 <= bytes; off += 8) {
            x ^= data.get(LE64, off);
        }
        return x;
    }

    private static final VectorSpecies<Short> UNITS = ShortVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> UNIT_SUMS = IntVector.SPECIES_PREFERRED;

    /**
     * Sum of all u16 units and the number that are not escapes (0xFFFF), as stitch_escaped_summary;
     * the tail past the last whole vector is summed by the caller from {@code summary[2]} on.
     * Units are added pairwise as 32-bit lanes (unit 2i in the low half, 2i+1 in the high half), in
     * rounds short enough that the int reduction of the lanes cannot overflow before it is added to
     * the long total.
     */
    static void escapedSummary(MemorySegment units, long unitCount, long[] summary) {
        int lanes = UNITS.length();
        long whole = unitCount - unitCount % lanes;
        long rounds = Integer.MAX_VALUE / (UNIT_SUMS.length() * 2L * 0xFFFF);
        long sum = 0;
        long ends = 0;
        ShortVector escape = ShortVector.broadcast(UNITS, (short) 0xFFFF);
        for (long u = 0; u < whole; ) {
            IntVector acc = IntVector.zero(UNIT_SUMS);
            long stop = Math.min(whole, u + rounds * lanes);
            for (; u < stop; u += lanes) {
                ShortVector v = ShortVector.fromMemorySegment(UNITS, units, u << 1, ByteOrder.LITTLE_ENDIAN);
                IntVector pairs = v.reinterpretAsInts();
                acc = acc.add(pairs.and(0xFFFF)).add(pairs.lanewise(VectorOperators.LSHR, 16));
                ends += lanes - v.compare(VectorOperators.EQ, escape).trueCount();
            }
            sum += acc.reduceLanesToLong(VectorOperators.ADD);
        }
        summary[0] = sum;
        summary[1] = ends;
        summary[2] = whole;
    }

    /** XORs the whole vectors of {@code payload} into {@code dst}; returns the bytes done, the caller does the rest. */
    static long xorInto(MemorySegment dst, MemorySegment payload, long bytes) {
        int vb = BYTES.vectorByteSize();
        long off = 0;
        for (; off + vb <= bytes; off += vb) {
            ByteVector.fromMemorySegment(BYTES, dst, off, ByteOrder.LITTLE_ENDIAN)
                .lanewise(VectorOperators.XOR, ByteVector.fromMemorySegment(BYTES, payload, off, ByteOrder.LITTLE_ENDIAN))
                .intoMemorySegment(dst, off, ByteOrder.LITTLE_ENDIAN);
        }
        return off;
    }

    /** Bytes {@link #streamRead} covers (whole 64-bit words). */
    static long streamBytes(long bytes) {
        return bytes & ~7L;
    }
}
