package dev.stitch.kernels;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The branch-free diff of 2- and 4-byte elements with 4-byte positions on 512-bit vectors, the Java
 * twin of the C AVX-512 kernel (diff_internal.h): per 64-byte line one compare gives the change
 * mask, COMPRESS packs the changed values and their indices, and whole-vector stores put them at the
 * next output slot, so nothing branches on the data (at a few percent density whether a line holds
 * a change is a coin flip, and mispredicting it cost the per-bit loop most of its time). A store
 * reaches at most one line's worth of slots past the last change, which stays inside the outputs
 * because the slot never runs ahead of the elements scanned and the outputs hold one slot per
 * element (DeltaKernels#diffGather); the stores are whole rather than masked to the packed lanes
 * because masked stores that overlap the previous line's measured slower. XOR values come from
 * masking the old vector rather than choosing between two vectors, which C2 would box on every
 * line. The snapshot gets a masked store of the changed elements only. Every segment is reached by
 * absolute address through {@link AddressSpace} after KernelArgs checked the bounds, so only native
 * segments take this path. Loaded only when the Vector API is present; used where
 * {@link #supported} (docs/platforms.md).
 */
final class VectorCompressDiff {

    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final MemorySegment ALL = AddressSpace.ALL;
    private static final VectorSpecies<Short> SHORTS = ShortVector.SPECIES_512;
    private static final VectorSpecies<Short> HALF_SHORTS = ShortVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_512;
    private static final IntVector IOTA = IntVector.zero(INTS).addIndex(1);
    /**
     * Whether 16-bit lanes compress in one instruction (x86 VPCOMPRESSW, AVX512_VBMI2); else values
     * are widened to 32-bit lanes, compressed there and narrowed back, as the C kernel does.
     */
    private static final boolean SHORT_COMPRESS = NativeLibrary.platform().endsWith("-x86_64") && CpuFeatures.hasFlag("avx512vbmi2");

    private VectorCompressDiff() {
    }

    /**
     * True when the JVM's vectors are 512 bits wide, the shape whose 32-bit compress it compiles to
     * one instruction (AVX-512 VPCOMPRESSD, SVE COMPACT); narrower vectors keep the per-bit scan.
     */
    static boolean supported() {
        return ByteVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /** True for bf16/f16/f32-sized elements with 4-byte positions in native segments. */
    static boolean handles(MemorySegment old, MemorySegment neu, MemorySegment positions, MemorySegment values,
                           int width, int positionWidth) {
        return (width == 2 || width == 4) && positionWidth == 4 && AddressSpace.reaches(old, neu, positions, values);
    }

    /** Bytes this kernel covers: whole 64-byte lines; the caller diffs the rest. */
    static long coveredBytes(long bytes) {
        return bytes & ~63L;
    }

    /** The diff of the covered bytes; returns the number of changes written from slot 0. */
    static long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex, long bytes,
                           MemorySegment positions, MemorySegment values, boolean xorValues, boolean updateSnapshot) {
        long end = coveredBytes(bytes);
        return width == 2
            ? diff16(old.address(), neu.address(), baseIndex, end, positions.address(), values.address(), xorValues, updateSnapshot)
            : diff32(old.address(), neu.address(), baseIndex, end, positions.address(), values.address(), xorValues, updateSnapshot);
    }

    private static long diff16(long old, long neu, long baseIndex, long end, long positions, long values,
                               boolean xorValues, boolean updateSnapshot) {
        long k = 0;
        short xorMask = (short) (xorValues ? -1 : 0);
        for (long off = 0; off < end; off += 64) {
            ShortVector o = ShortVector.fromMemorySegment(SHORTS, ALL, old + off, LE);
            ShortVector n = ShortVector.fromMemorySegment(SHORTS, ALL, neu + off, LE);
            VectorMask<Short> m = o.compare(VectorOperators.NE, n);
            long bits = m.toLong();
            ShortVector v = n.lanewise(VectorOperators.XOR, o.and(xorMask));
            VectorMask<Integer> m0 = VectorMask.fromLong(INTS, bits & 0xFFFF);
            VectorMask<Integer> m1 = VectorMask.fromLong(INTS, bits >>> 16);
            long k1 = k + Integer.bitCount((int) bits & 0xFFFF);
            if (SHORT_COMPRESS) {
                v.compress(m).intoMemorySegment(ALL, values + (k << 1), LE);
            } else {
                ((IntVector) v.convertShape(VectorOperators.S2I, INTS, 0)).compress(m0)
                    .convertShape(VectorOperators.I2S, HALF_SHORTS, 0).intoMemorySegment(ALL, values + (k << 1), LE);
                ((IntVector) v.convertShape(VectorOperators.S2I, INTS, 1)).compress(m1)
                    .convertShape(VectorOperators.I2S, HALF_SHORTS, 0).intoMemorySegment(ALL, values + (k1 << 1), LE);
            }
            IntVector index = IOTA.add((int) (baseIndex + (off >>> 1)));
            index.compress(m0).intoMemorySegment(ALL, positions + (k << 2), LE);
            index.add(16).compress(m1).intoMemorySegment(ALL, positions + (k1 << 2), LE);
            if (updateSnapshot) {
                n.intoMemorySegment(ALL, old + off, LE, m);
            }
            k += Long.bitCount(bits);
        }
        return k;
    }

    private static long diff32(long old, long neu, long baseIndex, long end, long positions, long values,
                               boolean xorValues, boolean updateSnapshot) {
        long k = 0;
        int xorMask = xorValues ? -1 : 0;
        for (long off = 0; off < end; off += 64) {
            IntVector o = IntVector.fromMemorySegment(INTS, ALL, old + off, LE);
            IntVector n = IntVector.fromMemorySegment(INTS, ALL, neu + off, LE);
            VectorMask<Integer> m = o.compare(VectorOperators.NE, n);
            IntVector v = n.lanewise(VectorOperators.XOR, o.and(xorMask));
            v.compress(m).intoMemorySegment(ALL, values + (k << 2), LE);
            IOTA.add((int) (baseIndex + (off >>> 2))).compress(m).intoMemorySegment(ALL, positions + (k << 2), LE);
            if (updateSnapshot) {
                n.intoMemorySegment(ALL, old + off, LE, m);
            }
            k += m.trueCount();
        }
        return k;
    }
}
