package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE64;

import java.lang.foreign.MemorySegment;

/**
 * The diff and change count in SWAR over 64-bit little-endian words: unchanged regions are skipped
 * a word (or four) at a time and only words with a difference are examined lane by lane. The whole
 * job where the Vector API is absent, and the tail past the last whole vector where it is present.
 */
final class SwarDiff {

    private SwarDiff() {
    }

    /** Changed elements in bytes [from, bytes) (from a multiple of 8). */
    static long countChanged(MemorySegment old, MemorySegment neu, int width, long from, long bytes) {
        long count = 0;
        long words = bytes >>> 3;
        long lowBits = lowLaneBits(width);
        for (long w = from >>> 3; w < words; w++) {
            long x = old.get(LE64, w << 3) ^ neu.get(LE64, w << 3);
            if (x != 0) {
                count += Long.bitCount(foldLanes(x, width) & lowBits);
            }
        }
        for (long off = words << 3; off < bytes; off += width) {
            if (ElementAccess.get(old, width, off) != ElementAccess.get(neu, width, off)) {
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

    /**
     * The fused diff of bytes [from, bytes) (from a multiple of 8), appending from output slot
     * {@code k}; returns the slot after the last change written.
     */
    static long diffGather(MemorySegment old, MemorySegment neu, int width, long baseIndex, long from, long bytes,
                           MemorySegment positions, int positionWidth, MemorySegment values,
                           boolean xorValues, boolean updateSnapshot, long k) {
        long words = bytes >>> 3;
        int lanes = 8 / width;
        int laneBits = 8 * width;
        long mask = ElementAccess.laneMask(width);
        long w = from >>> 3;
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
            long o = ElementAccess.get(old, width, off);
            long nv = ElementAccess.get(neu, width, off);
            if (o != nv) {
                ElementAccess.writePosition(positions, positionWidth, k, baseIndex + off / width);
                ElementAccess.set(values, width, k * width, xorValues ? o ^ nv : nv);
                if (updateSnapshot) {
                    ElementAccess.set(old, width, off, nv);
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
                ElementAccess.writePosition(positions, positionWidth, k, firstIndex + j);
                ElementAccess.set(values, width, k * width, xorValues ? d : (nv >>> (laneBits * j)) & mask);
                k++;
            }
        }
        if (updateSnapshot) {
            old.set(LE64, off, nv);
        }
        return k;
    }
}
