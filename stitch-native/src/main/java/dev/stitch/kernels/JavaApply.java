package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;
import static dev.stitch.kernels.KernelArgs.LE32;
import static dev.stitch.kernels.KernelArgs.LE64;
import static dev.stitch.kernels.KernelArgs.U8;

import java.lang.foreign.MemorySegment;

/**
 * The apply kernels in Java: scatter (or XOR) values into a tensor at plain or escaped-gap
 * positions, XOR a whole payload in, and patch single bytes. Streams are validated in a first pass,
 * so a malformed one never writes a byte.
 */
final class JavaApply {

    private JavaApply() {
    }

    static void scatter(MemorySegment dst, int width, MemorySegment positions, int positionWidth, MemorySegment values,
                        long count, boolean xor) {
        KernelArgs.scatter(dst, width, positions, positionWidth, values, count);
        long limit = dst.byteSize() / width;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            if (Long.compareUnsigned(p, limit) >= 0) {
                throw KernelArgs.positionOutOfRange(p, limit);
            }
            long off = p * width;
            long v = ElementAccess.get(values, width, k * width);
            ElementAccess.set(dst, width, off, xor ? ElementAccess.get(dst, width, off) ^ v : v);
        }
    }

    static long scatterEscapedGaps(MemorySegment dst, int width, MemorySegment units, long unitCount,
                                   MemorySegment values, long count, boolean xor, boolean vector) {
        KernelArgs.width(width);
        KernelArgs.escaped(units, unitCount);
        KernelArgs.holds(values, count, width, "values");
        KernelArgs.writable(dst, "destination");
        JavaGapCoding.validateEscaped(units, unitCount, count, dst.byteSize() / width, vector);
        if (width == 2 && !xor && AddressSpace.reaches(dst, units, values)) {
            return scatterEscaped16(dst.address(), units.address(), unitCount, values.address());
        }
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
            long v = ElementAccess.get(values, width, k * width);
            ElementAccess.set(dst, width, off, xor ? ElementAccess.get(dst, width, off) ^ v : v);
            k++;
        }
        return k;
    }

    /**
     * The bf16/f16 overwrite, the apply every rollout host runs, by absolute address (AddressSpace):
     * the validation above proved every position is inside dst and the stream holds exactly the
     * values' count, so the loop needs no per-element checks and no width switch.
     */
    private static long scatterEscaped16(long dst, long units, long unitCount, long values) {
        MemorySegment all = AddressSpace.ALL;
        long prev = -1;
        long gap = 0;
        long k = 0;
        for (long u = 0; u < unitCount; u++) {
            int unit = all.get(LE16, units + (u << 1)) & 0xFFFF;
            gap += unit;
            if (unit == 0xFFFF) {
                continue;
            }
            prev += gap + 1;
            gap = 0;
            all.set(LE16, dst + (prev << 1), all.get(LE16, values + (k << 1)));
            k++;
        }
        return k;
    }

    static void xorInto(MemorySegment dst, MemorySegment payload, boolean vector) {
        long bytes = payload.byteSize();
        if (dst.byteSize() < bytes) {
            throw new IllegalArgumentException("xor payload of " + bytes + " bytes is larger than the destination's " + dst.byteSize());
        }
        KernelArgs.writable(dst, "destination");
        long off = vector ? VectorScan.xorInto(dst, payload, bytes) : 0;
        for (; off + 8 <= bytes; off += 8) {
            dst.set(LE64, off, dst.get(LE64, off) ^ payload.get(LE64, off));
        }
        for (; off < bytes; off++) {
            dst.set(U8, off, (byte) (dst.get(U8, off) ^ payload.get(U8, off)));
        }
    }

    /** Validates every offset first, so a bad one writes nothing. */
    static void overwriteBytes(MemorySegment dst, MemorySegment offsets, MemorySegment bytes, long count) {
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
}
