package dev.stitch.kernels;

import static dev.stitch.kernels.KernelArgs.LE16;

import java.lang.foreign.MemorySegment;

/**
 * Gap coding of ascending positions in Java: fixed-width gaps, and the escaped u16 stream (a unit of
 * 0xFFFF adds 65535 to the gap and continues it; docs/formats/stitch-delta.md §4.2) with its
 * encoder, checked decoder and the validation every apply from a stream runs first.
 */
final class JavaGapCoding {

    private JavaGapCoding() {
    }

    static long maxGap(MemorySegment positions, int positionWidth, long count) {
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

    static void encodeGaps(MemorySegment positions, int positionWidth, long count, MemorySegment gaps, int gapWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(gaps, "gaps");
        long prev = -1;
        for (long k = 0; k < count; k++) {
            long p = KernelArgs.position(positions, positionWidth, k);
            ElementAccess.set(gaps, gapWidth, k * gapWidth, p - prev - 1);
            prev = p;
        }
    }

    static void decodeGaps(MemorySegment gaps, int gapWidth, long count, MemorySegment positions, int positionWidth) {
        KernelArgs.positionWidth(positionWidth);
        KernelArgs.gapWidth(gapWidth);
        KernelArgs.holds(positions, count, positionWidth, "positions");
        KernelArgs.holds(gaps, count, gapWidth, "gaps");
        KernelArgs.writable(positions, "positions");
        long prev = -1;
        for (long k = 0; k < count; k++) {
            prev += ElementAccess.get(gaps, gapWidth, k * gapWidth) + 1;
            ElementAccess.writePosition(positions, positionWidth, k, prev);
        }
    }

    static long escapedGapUnits(MemorySegment positions, int positionWidth, long count) {
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

    static long encodeEscapedGaps(MemorySegment positions, int positionWidth, long count, MemorySegment units, long firstIndex) {
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

    static long decodeEscapedGaps(MemorySegment units, long unitCount, MemorySegment positions, int positionWidth,
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
            ElementAccess.writePosition(positions, positionWidth, k++, p);
            prev = p;
            gap = 0;
        }
        if (gap != 0) {
            throw KernelArgs.truncatedEscape();
        }
        return k;
    }

    /**
     * A first pass over the (small) gap stream, so a malformed stream never writes a byte. Positions
     * only grow, so the last one bounds them all: it is the sum of all unit values plus the number
     * of non-escape units, minus one. {@code vector} sums whole vectors with the Vector API.
     */
    static void validateEscaped(MemorySegment units, long unitCount, long count, long limit, boolean vector) {
        long[] summary = new long[3];
        if (vector) {
            VectorScan.escapedSummary(units, unitCount, summary);
        }
        long sum = summary[0];
        long positions = summary[1];
        for (long u = summary[2]; u < unitCount; u++) {
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
}
