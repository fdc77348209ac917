package dev.stitch.format.stitchdelta;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The escaped u16 gap stream of stitch_delta (delta-formats.md 4.2): gaps {@code g[0] = idx[0]},
 * {@code g[k] = idx[k] - idx[k-1] - 1}; a gap is {@code g / 65535} units {@code 0xFFFF} then one unit
 * {@code g % 65535}. Indices accumulate in 64 bits.
 */
final class GapCodec {

    static final int ESCAPE = 0xFFFF;
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private GapCodec() {
    }

    /** Units needed for ascending {@code positions}. */
    static long unitCount(long[] positions) {
        long units = 0;
        long prev = -1;
        for (long p : positions) {
            long g = p - prev - 1;
            units += g / ESCAPE + 1;
            prev = p;
        }
        return units;
    }

    /** Writes the units of ascending {@code positions} as u16 LE into {@code out}; returns the count. */
    static long encode(long[] positions, MemorySegment out) {
        long u = 0;
        long prev = -1;
        for (long p : positions) {
            long g = p - prev - 1;
            if (g < 0) {
                throw new IllegalArgumentException("positions are not strictly ascending at " + p);
            }
            for (long e = g / ESCAPE; e > 0; e--) {
                out.set(U16, 2 * u++, (short) ESCAPE);
            }
            out.set(U16, 2 * u++, (short) (g % ESCAPE));
            prev = p;
        }
        return u;
    }
}
