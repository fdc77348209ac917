package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.tensor.Dtype;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The one contract every {@link DeltaKernels} implementation passes: each kernel is checked against
 * a plain element-by-element model written here, on random and edge inputs, so implementations that
 * pass are bit-identical to each other.
 */
public abstract class DeltaKernelsContract {

    private static final int[] WIDTHS = {1, 2, 4, 8};

    protected abstract DeltaKernels kernels();

    // ---- helpers ----------------------------------------------------------------------------

    static long elem(byte[] b, int width, long i) {
        long v = 0;
        for (int j = 0; j < width; j++) {
            v |= (b[(int) (i * width + j)] & 0xFFL) << (8 * j);
        }
        return v;
    }

    static void putElem(byte[] b, int width, long i, long v) {
        for (int j = 0; j < width; j++) {
            b[(int) (i * width + j)] = (byte) (v >>> (8 * j));
        }
    }

    /** A pair (old, new) of {@code n} elements where about {@code density} of them differ. */
    static byte[][] pair(SplittableRandom rnd, int width, int n, double density) {
        byte[] old = new byte[n * width];
        rnd.nextBytes(old);
        byte[] neu = old.clone();
        for (int i = 0; i < n; i++) {
            if (rnd.nextDouble() < density) {
                long v = elem(neu, width, i);
                long flip = 1L << rnd.nextInt(8 * width);
                putElem(neu, width, i, v ^ flip ^ (rnd.nextBoolean() ? 0 : rnd.nextLong() & ElementAccess.laneMask(width)));
                if (elem(neu, width, i) == v) {
                    putElem(neu, width, i, v ^ 1);
                }
            }
        }
        return new byte[][] {old, neu};
    }

    static long[] changed(byte[] old, byte[] neu, int width) {
        int n = old.length / width;
        return java.util.stream.IntStream.range(0, n).filter(i -> elem(old, width, i) != elem(neu, width, i)).asLongStream().toArray();
    }

    static MemorySegment nat(Arena arena, byte[] b) {
        MemorySegment s = arena.allocate(Math.max(1, b.length), 64).asSlice(0, b.length);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s;
    }

    static byte[] positionsBytes(long[] pos, int pw) {
        ByteBuffer bb = ByteBuffer.allocate(pos.length * pw).order(ByteOrder.LITTLE_ENDIAN);
        for (long p : pos) {
            if (pw == 4) {
                bb.putInt((int) p);
            } else {
                bb.putLong(p);
            }
        }
        return bb.array();
    }

    static long[] gapsOf(long[] pos) {
        long[] g = new long[pos.length];
        long prev = -1;
        for (int k = 0; k < pos.length; k++) {
            g[k] = pos[k] - prev - 1;
            prev = pos[k];
        }
        return g;
    }

    static short[] escapedOf(long[] pos) {
        java.util.List<Short> units = new java.util.ArrayList<>();
        for (long g : gapsOf(pos)) {
            for (long e = 0; e < g / 65535; e++) {
                units.add((short) 0xFFFF);
            }
            units.add((short) (g % 65535));
        }
        short[] out = new short[units.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = units.get(i);
        }
        return out;
    }

    static byte[] unitsBytes(short[] units) {
        ByteBuffer bb = ByteBuffer.allocate(units.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (short u : units) {
            bb.putShort(u);
        }
        return bb.array();
    }

    // ---- diff -------------------------------------------------------------------------------

    @Test
    void countAndGatherMatchModelForEveryWidthDensityAndLayout() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(11);
        try (Arena arena = Arena.ofConfined()) {
            for (int width : WIDTHS) {
                for (double density : new double[] {0, 0.001, 0.03, 0.3, 1}) {
                    for (int n : new int[] {0, 1, 3, 7, 16, 31, 33, 64, 127, 1000, 4099}) {
                        byte[][] p = pair(rnd, width, n, density);
                        long[] expected = changed(p[0], p[1], width);
                        boolean heap = rnd.nextBoolean();
                        MemorySegment old = heap ? MemorySegment.ofArray(p[0].clone()) : nat(arena, p[0]);
                        MemorySegment neu = heap ? MemorySegment.ofArray(p[1]) : nat(arena, p[1]);
                        assertEquals(expected.length, k.countChanged(old, neu, width), "count w" + width + " n" + n);
                        for (int pw : new int[] {4, 8}) {
                            for (int mode = 0; mode < 4; mode++) {
                                boolean xor = (mode & 1) != 0;
                                boolean update = (mode & 2) != 0;
                                long base = pw == 8 ? (1L << 33) + 5 : 1000;
                                // all-native outputs too, the layout the Java kernels reach by address
                                MemorySegment positions = heap ? MemorySegment.ofArray(new byte[n * pw]) : nat(arena, new byte[n * pw]);
                                MemorySegment values = nat(arena, new byte[n * width]);
                                MemorySegment snapshot = heap ? MemorySegment.ofArray(p[0].clone()) : nat(arena, p[0]);
                                long got = k.diffGather(snapshot, neu, width, base, positions, pw, values, xor, update);
                                assertEquals(expected.length, got);
                                long[] shifted = Arrays.stream(expected).map(i -> i + base).toArray();
                                assertArrayEquals(positionsBytes(shifted, pw), Arrays.copyOf(positions.toArray(ValueLayout.JAVA_BYTE), expected.length * pw));
                                byte[] vals = values.toArray(ValueLayout.JAVA_BYTE);
                                for (int j = 0; j < expected.length; j++) {
                                    long nv = elem(p[1], width, expected[j]);
                                    long ov = elem(p[0], width, expected[j]);
                                    assertEquals(xor ? nv ^ ov : nv, elem(vals, width, j), "value " + j + " w" + width);
                                }
                                byte[] snapAfter = snapshot.toArray(ValueLayout.JAVA_BYTE);
                                assertArrayEquals(update ? p[1] : p[0], snapAfter, "snapshot update=" + update);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void diffGatherOnUnalignedSlices() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena arena = Arena.ofConfined()) {
            for (boolean heap : new boolean[] {true, false}) {
                for (int width : WIDTHS) {
                    byte[][] p = pair(rnd, width, 301, 0.1);
                    byte[] oldPad = new byte[p[0].length + 3];
                    byte[] newPad = new byte[p[1].length + 5];
                    System.arraycopy(p[0], 0, oldPad, 3, p[0].length);
                    System.arraycopy(p[1], 0, newPad, 5, p[1].length);
                    MemorySegment old = (heap ? MemorySegment.ofArray(oldPad) : nat(arena, oldPad)).asSlice(3, p[0].length);
                    MemorySegment neu = (heap ? MemorySegment.ofArray(newPad) : nat(arena, newPad)).asSlice(5, p[1].length);
                    long[] expected = changed(p[0], p[1], width);
                    MemorySegment positions = (heap ? MemorySegment.ofArray(new byte[301 * 4 + 1]) : nat(arena, new byte[301 * 4 + 1])).asSlice(1);
                    MemorySegment values = (heap ? MemorySegment.ofArray(new byte[301 * width + 7]) : nat(arena, new byte[301 * width + 7])).asSlice(7);
                    assertEquals(expected.length, k.diffGather(old, neu, width, 0, positions, 4, values, false, true));
                    assertArrayEquals(positionsBytes(expected, 4), Arrays.copyOf(positions.toArray(ValueLayout.JAVA_BYTE), expected.length * 4));
                    assertArrayEquals(p[1], old.toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
    }

    @Test
    void diffGatherHashingEqualsADiffThenAStreamUpdate() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(17);
        for (int width : WIDTHS) {
            // below a stripe, whole lines (the fused case for bf16), a ragged end, and long runs
            for (int n : new int[] {0, 5, 64 / width, 128 / width, 4096 / width + 3, 8192 / width, 70_000}) {
                // prefixes leave the stream empty, short, ragged, or holding whole stripes back
                for (int prefix : new int[] {0, 17, 64, 192, 300, 320, 1088}) {
                    boolean xor = (n + prefix) % 2 == 0;
                    boolean update = prefix % 3 == 0;
                    byte[][] p = pair(rnd, width, n, 0.05);
                    byte[] head = new byte[prefix];
                    rnd.nextBytes(head);
                    MemorySegment oldA = MemorySegment.ofArray(p[0].clone());
                    MemorySegment oldB = MemorySegment.ofArray(p[0].clone());
                    MemorySegment neu = MemorySegment.ofArray(p[1]);
                    MemorySegment posA = MemorySegment.ofArray(new byte[n * 4 + 64]);
                    MemorySegment posB = MemorySegment.ofArray(new byte[n * 4 + 64]);
                    MemorySegment valA = MemorySegment.ofArray(new byte[n * width + 64]);
                    MemorySegment valB = MemorySegment.ofArray(new byte[n * width + 64]);
                    long base = 1000;
                    Xxh3Stream fused = k.newXxh3Stream().update(MemorySegment.ofArray(head));
                    long got = k.diffGatherHashing(oldA, neu, width, base, posA, 4, valA, xor, update, fused);
                    long want = k.diffGather(oldB, neu, width, base, posB, 4, valB, xor, update);
                    String where = "width " + width + ", n " + n + ", prefix " + prefix;
                    assertEquals(want, got, where);
                    assertEquals(-1, posA.mismatch(posB), where);
                    assertEquals(-1, valA.mismatch(valB), where);
                    assertEquals(-1, oldA.mismatch(oldB), where);
                    byte[] all = new byte[prefix + 2 * p[1].length + 5];
                    System.arraycopy(head, 0, all, 0, prefix);
                    System.arraycopy(p[1], 0, all, prefix, p[1].length);
                    assertEquals(Xxh3.hash128(Arrays.copyOf(all, prefix + p[1].length)), fused.digest(), where);
                    // the stream goes on correctly: the same slice again, then a ragged tail
                    k.diffGatherHashing(MemorySegment.ofArray(p[0].clone()), neu, width, base, posA, 4, valA, xor, false, fused);
                    System.arraycopy(p[1], 0, all, prefix + p[1].length, p[1].length);
                    fused.update(MemorySegment.ofArray(new byte[5]));
                    assertEquals(Xxh3.hash128(all), fused.digest(), where + ", continued");
                    // a stream of another implementation is fed too
                    Xxh3Stream other = Kernels.java().newXxh3Stream().update(MemorySegment.ofArray(head));
                    k.diffGatherHashing(MemorySegment.ofArray(p[0].clone()), neu, width, base, posA, 4, valA, xor, false, other);
                    assertEquals(Xxh3.hash128(Arrays.copyOf(all, prefix + p[1].length)), other.digest(), where);
                }
            }
        }
    }

    @Test
    void diffGatherRejectsBadArguments() {
        DeltaKernels k = kernels();
        MemorySegment a = MemorySegment.ofArray(new byte[16]);
        MemorySegment b = MemorySegment.ofArray(new byte[18]);
        MemorySegment pos = MemorySegment.ofArray(new byte[64]);
        MemorySegment val = MemorySegment.ofArray(new byte[64]);
        assertThrows(IllegalArgumentException.class, () -> k.countChanged(a, b, 2));
        assertThrows(IllegalArgumentException.class, () -> k.countChanged(a, a, 3));
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a, a, 2, 0, pos, 2, val, false, false));
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a, a, 2, 0, MemorySegment.ofArray(new byte[8]), 4, val, false, false));
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a, a, 2, 0xFFFF_FFFFL, pos, 4, val, false, false));
        assertEquals(0, k.diffGather(a, a, 2, 0xFFFF_FFFFL - 7, pos, 4, val, false, false));
    }

    @Test
    void readOnlyOutputsAreRefused() {
        DeltaKernels k = kernels();
        MemorySegment a = MemorySegment.ofArray(new byte[16]);
        MemorySegment b = MemorySegment.ofArray(new byte[16]);
        b.set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
        MemorySegment ro = MemorySegment.ofArray(new byte[64]).asReadOnly();
        MemorySegment rw = MemorySegment.ofArray(new byte[64]);
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a.asReadOnly(), b, 2, 0, rw, 4, rw, false, true));
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a, b, 2, 0, ro, 4, rw, false, false));
        assertThrows(IllegalArgumentException.class, () -> k.diffGather(a, b, 2, 0, rw, 4, ro, false, false));
        assertEquals(1, k.diffGather(a.asReadOnly(), b, 2, 0, rw, 4, MemorySegment.ofArray(new byte[16]), false, false));
        MemorySegment pos = MemorySegment.ofArray(positionsBytes(new long[] {1}, 4));
        assertThrows(IllegalArgumentException.class, () -> k.scatter(ro, 2, pos, 4, rw, 1));
        assertThrows(IllegalArgumentException.class, () -> k.scatterXor(ro, 2, pos, 4, rw, 1));
        MemorySegment unit = MemorySegment.ofArray(unitsBytes(new short[] {1}));
        assertThrows(IllegalArgumentException.class, () -> k.scatterEscapedGaps(ro, 2, unit, 1, rw, 1, false));
        assertThrows(IllegalArgumentException.class, () -> k.xorInto(ro, rw.asSlice(0, 8)));
        assertThrows(IllegalArgumentException.class, () -> k.encodeGaps(pos, 4, 1, ro, 2));
        assertThrows(IllegalArgumentException.class, () -> k.decodeGaps(rw, 2, 1, ro, 4));
        assertThrows(IllegalArgumentException.class, () -> k.encodeEscapedGaps(pos, 4, 1, ro));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(unit, 1, ro, 4, 1, 10));
        assertThrows(IllegalArgumentException.class, () -> k.splitPlanes(rw, 2, 4, ro));
        assertThrows(IllegalArgumentException.class, () -> k.mergePlanes(rw, 2, 4, ro));
        assertThrows(IllegalArgumentException.class, () -> k.overwriteBytes(ro, MemorySegment.ofArray(new byte[4]), rw, 1));
        assertThrows(IllegalArgumentException.class, () -> k.streamFill(ro, (byte) 1));
    }

    @Test
    void nanDetectionPerDtype() {
        DeltaKernels k = kernels();
        check(k, Dtype.BF16, new long[] {0x7F80, 0xFF80, 0x3F80, 0x0000, 0x8000}, false);
        check(k, Dtype.BF16, new long[] {0x3F80, 0x7FC0}, true);
        check(k, Dtype.BF16, new long[] {0xFF81}, true);
        check(k, Dtype.F16, new long[] {0x7C00, 0xFC00, 0x3C00}, false);
        check(k, Dtype.F16, new long[] {0x3C00, 0x7C01}, true);
        check(k, Dtype.F32, new long[] {0x7F80_0000L, 0xFF80_0000L, 0x3F80_0000L}, false);
        check(k, Dtype.F32, new long[] {0x7F80_0001L}, true);
        check(k, Dtype.F32, new long[] {0xFFC0_0000L}, true);
        check(k, Dtype.F64, new long[] {0x7FF0_0000_0000_0000L, 0x3FF0_0000_0000_0000L}, false);
        check(k, Dtype.F64, new long[] {0x7FF0_0000_0000_0001L}, true);
        check(k, Dtype.F8_E4M3, new long[] {0x7E, 0xFE, 0x00}, false);
        check(k, Dtype.F8_E4M3, new long[] {0xFF}, true);
        check(k, Dtype.F8_E5M2, new long[] {0x7C, 0xFC}, false);
        check(k, Dtype.F8_E5M2, new long[] {0x7D}, true);
        check(k, Dtype.F8_E8M0, new long[] {0xFE, 0x00}, false);
        check(k, Dtype.F8_E8M0, new long[] {0xFF}, true);
        check(k, Dtype.I16, new long[] {0x7FFF, 0xFFFF}, false);
        check(k, Dtype.U8, new long[] {0xFF}, false);
        // Only the first count values are looked at.
        byte[] b = new byte[8];
        putElem(b, 2, 3, 0x7FC0);
        assertFalse(k.containsNaN(MemorySegment.ofArray(b), Dtype.BF16, 3));
        assertTrue(k.containsNaN(MemorySegment.ofArray(b), Dtype.BF16, 4));
        // A long run with one NaN at the very end exercises any vector loop and its tail.
        for (int n : new int[] {1, 31, 32, 33, 1000}) {
            byte[] big = new byte[n * 2];
            assertFalse(k.containsNaN(MemorySegment.ofArray(big), Dtype.BF16, n));
            putElem(big, 2, n - 1, 0xFFC1);
            assertTrue(k.containsNaN(MemorySegment.ofArray(big), Dtype.BF16, n), "n " + n);
        }
    }

    private static void check(DeltaKernels k, Dtype dtype, long[] bits, boolean nan) {
        byte[] b = new byte[bits.length * dtype.width()];
        for (int i = 0; i < bits.length; i++) {
            putElem(b, dtype.width(), i, bits[i]);
        }
        assertEquals(nan, k.containsNaN(MemorySegment.ofArray(b), dtype, bits.length), dtype + " " + Arrays.toString(bits));
    }

    // ---- gaps -------------------------------------------------------------------------------

    @Test
    void fixedWidthGapsRoundTrip() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(21);
        for (int trial = 0; trial < 40; trial++) {
            int n = rnd.nextInt(0, 3000);
            long[] pos = randomPositions(rnd, n, trial % 3 == 0 ? 70_000 : 600);
            for (int pw : new int[] {4, 8}) {
                long[] expectedGaps = gapsOf(pos);
                long max = Arrays.stream(expectedGaps).max().orElse(0);
                MemorySegment positions = MemorySegment.ofArray(positionsBytes(pos, pw));
                assertEquals(max, k.maxGap(positions, pw, n));
                int gw = max <= 0xFFFF ? 2 : 4;
                MemorySegment gaps = MemorySegment.ofArray(new byte[n * gw]);
                k.encodeGaps(positions, pw, n, gaps, gw);
                byte[] gb = gaps.toArray(ValueLayout.JAVA_BYTE);
                for (int j = 0; j < n; j++) {
                    assertEquals(expectedGaps[j], elem(gb, gw, j));
                }
                MemorySegment back = MemorySegment.ofArray(new byte[n * pw]);
                k.decodeGaps(gaps, gw, n, back, pw);
                assertArrayEquals(positionsBytes(pos, pw), back.toArray(ValueLayout.JAVA_BYTE));
            }
        }
        assertEquals(0, k.maxGap(MemorySegment.ofArray(new byte[0]), 4, 0));
    }

    static long[] randomPositions(SplittableRandom rnd, int n, int maxStep) {
        long[] pos = new long[n];
        long p = -1;
        for (int i = 0; i < n; i++) {
            p += 1 + rnd.nextInt(maxStep);
            pos[i] = p;
        }
        return pos;
    }

    @Test
    void escapedGapPiecesCountFromTheirFirstIndex() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(41);
        for (int trial = 0; trial < 40; trial++) {
            int pw = trial % 2 == 0 ? 4 : 8;
            long[] pos = randomPositions(rnd, 1 + rnd.nextInt(500), trial % 3 == 0 ? 300_000 : 50);
            long first = rnd.nextLong(pos[0] + 1);
            long[] shifted = Arrays.stream(pos).map(p -> p - first).toArray();
            short[] expected = escapedOf(shifted);
            MemorySegment positions = MemorySegment.ofArray(positionsBytes(pos, pw));
            MemorySegment units = MemorySegment.ofArray(new byte[expected.length * 2]);
            assertEquals(expected.length, k.encodeEscapedGaps(positions, pw, pos.length, units, first));
            assertArrayEquals(unitsBytes(expected), units.toArray(ValueLayout.JAVA_BYTE));
            MemorySegment small = MemorySegment.ofArray(new byte[expected.length * 2 - 2]);
            assertThrows(IllegalArgumentException.class, () -> k.encodeEscapedGaps(positions, pw, pos.length, small, first));
        }
        MemorySegment one = MemorySegment.ofArray(positionsBytes(new long[] {10}, 4));
        assertThrows(IllegalArgumentException.class,
                () -> k.encodeEscapedGaps(one, 4, 1, MemorySegment.ofArray(new byte[8]), 11));
    }

    @Test
    void escapedGapsEdgeCases() {
        DeltaKernels k = kernels();
        // Gaps 65534, 65535, 65536, 131070 (docs/formats/stitch-delta.md §4.2) and a first index past 2^32.
        long[] pos = new long[] {65534, 65534 + 65535 + 1, 65534 + 65535 + 1 + 65536 + 1};
        pos = Arrays.copyOf(pos, 4);
        pos[3] = pos[2] + 131070 + 1;
        short[] expected = {(short) 0xFFFE, (short) 0xFFFF, 0, (short) 0xFFFF, 1, (short) 0xFFFF, (short) 0xFFFF, 0};
        checkEscaped(k, pos, 8, expected);
        checkEscaped(k, pos, 4, expected);
        long big = (1L << 32) + 3;
        short[] bigUnits = escapedOf(new long[] {big});
        checkEscaped(k, new long[] {big}, 8, bigUnits);
        checkEscaped(k, new long[] {0, 1, 2}, 4, new short[] {0, 0, 0});
        checkEscaped(k, new long[0], 4, new short[0]);
        SplittableRandom rnd = new SplittableRandom(4);
        for (int trial = 0; trial < 30; trial++) {
            long[] r = randomPositions(rnd, rnd.nextInt(2000), trial % 2 == 0 ? 200_000 : 100);
            checkEscaped(k, r, 8, escapedOf(r));
        }
    }

    private static void checkEscaped(DeltaKernels k, long[] pos, int pw, short[] expectedUnits) {
        MemorySegment positions = MemorySegment.ofArray(positionsBytes(pos, pw));
        assertEquals(expectedUnits.length, k.escapedGapUnits(positions, pw, pos.length));
        MemorySegment units = MemorySegment.ofArray(new byte[expectedUnits.length * 2 + 2]);
        assertEquals(expectedUnits.length, k.encodeEscapedGaps(positions, pw, pos.length, units));
        assertArrayEquals(unitsBytes(expectedUnits), Arrays.copyOf(units.toArray(ValueLayout.JAVA_BYTE), expectedUnits.length * 2));
        MemorySegment back = MemorySegment.ofArray(new byte[pos.length * pw]);
        long limit = pos.length == 0 ? 0 : pos[pos.length - 1] + 1;
        if (pw == 8 || limit <= (1L << 32)) {
            assertEquals(pos.length, k.decodeEscapedGaps(units, expectedUnits.length, back, pw, pos.length, limit));
            assertArrayEquals(positionsBytes(pos, pw), back.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void malformedEscapedStreamsAreRejected() {
        DeltaKernels k = kernels();
        MemorySegment out = MemorySegment.ofArray(new byte[64]);
        MemorySegment trailingEscape = MemorySegment.ofArray(unitsBytes(new short[] {1, (short) 0xFFFF}));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(trailingEscape, 2, out, 4, 8, 1000));
        MemorySegment three = MemorySegment.ofArray(unitsBytes(new short[] {0, 0, 0}));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(three, 3, out, 4, 2, 1000));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(three, 3, out, 4, 8, 2));
        assertEquals(3, k.decodeEscapedGaps(three, 3, out, 4, 3, 3));
        // A 4-byte position stream cannot hold an index of 2^32.
        MemorySegment huge = MemorySegment.ofArray(unitsBytes(escapedOf(new long[] {1L << 32})));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(huge, huge.byteSize() / 2, out, 4, 1, Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> k.decodeEscapedGaps(three, 4, out, 4, 8, 1000));
    }

    // ---- planes -----------------------------------------------------------------------------

    @Test
    void bytePlanesRoundTrip() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(8);
        for (int width : WIDTHS) {
            for (int n : new int[] {0, 1, 5, 64, 1001}) {
                byte[] src = new byte[n * width];
                rnd.nextBytes(src);
                MemorySegment planes = MemorySegment.ofArray(new byte[src.length]);
                k.splitPlanes(MemorySegment.ofArray(src), width, n, planes);
                byte[] pb = planes.toArray(ValueLayout.JAVA_BYTE);
                for (int i = 0; i < n; i++) {
                    for (int b = 0; b < width; b++) {
                        assertEquals(src[i * width + b], pb[b * n + i]);
                    }
                }
                MemorySegment back = MemorySegment.ofArray(new byte[src.length]);
                k.mergePlanes(planes, width, n, back);
                assertArrayEquals(src, back.toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    // ---- apply ------------------------------------------------------------------------------

    @Test
    void scatterVariantsMatchModel() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(9);
        try (Arena arena = Arena.ofConfined()) {
            for (int width : WIDTHS) {
                for (double density : new double[] {0, 0.01, 0.3, 1}) {
                    int n = 2000 + rnd.nextInt(100);
                    byte[][] p = pair(rnd, width, n, density);
                    long[] pos = changed(p[0], p[1], width);
                    byte[] vals = new byte[pos.length * width];
                    byte[] xors = new byte[pos.length * width];
                    for (int j = 0; j < pos.length; j++) {
                        putElem(vals, width, j, elem(p[1], width, pos[j]));
                        putElem(xors, width, j, elem(p[1], width, pos[j]) ^ elem(p[0], width, pos[j]));
                    }
                    for (int pw : new int[] {4, 8}) {
                        MemorySegment dst = nat(arena, p[0]);
                        k.scatter(dst, width, MemorySegment.ofArray(positionsBytes(pos, pw)), pw, MemorySegment.ofArray(vals), pos.length);
                        assertArrayEquals(p[1], dst.toArray(ValueLayout.JAVA_BYTE));
                        MemorySegment dst2 = MemorySegment.ofArray(p[0].clone());
                        k.scatterXor(dst2, width, nat(arena, positionsBytes(pos, pw)), pw, MemorySegment.ofArray(xors), pos.length);
                        assertArrayEquals(p[1], dst2.toArray(ValueLayout.JAVA_BYTE));
                    }
                    short[] units = escapedOf(pos);
                    for (boolean xor : new boolean[] {false, true}) {
                        MemorySegment dst = nat(arena, p[0]);
                        // overwrites from native streams take the Java kernels' by-address path, XORs from heap ones the checked path
                        MemorySegment unitSeg = xor ? MemorySegment.ofArray(unitsBytes(units)) : nat(arena, unitsBytes(units));
                        MemorySegment valueSeg = xor ? MemorySegment.ofArray(xors) : nat(arena, vals);
                        long written = k.scatterEscapedGaps(dst, width, unitSeg, units.length, valueSeg, pos.length, xor);
                        assertEquals(pos.length, written);
                        assertArrayEquals(p[1], dst.toArray(ValueLayout.JAVA_BYTE));
                    }
                }
            }
        }
    }

    @Test
    void scatterEscapedGapsRejectsMalformedStreamsWithoutWriting() {
        DeltaKernels k = kernels();
        byte[] original = new byte[20];
        Arrays.fill(original, (byte) 7);
        MemorySegment dst = MemorySegment.ofArray(original.clone());
        MemorySegment vals = MemorySegment.ofArray(new byte[20]);
        // trailing escape
        assertThrows(IllegalArgumentException.class,
            () -> k.scatterEscapedGaps(dst, 2, MemorySegment.ofArray(unitsBytes(new short[] {0, (short) 0xFFFF})), 2, vals, 1, false));
        // count mismatch, both ways
        assertThrows(IllegalArgumentException.class,
            () -> k.scatterEscapedGaps(dst, 2, MemorySegment.ofArray(unitsBytes(new short[] {0, 0})), 2, vals, 3, false));
        assertThrows(IllegalArgumentException.class,
            () -> k.scatterEscapedGaps(dst, 2, MemorySegment.ofArray(unitsBytes(new short[] {0, 0, 0})), 3, vals, 2, false));
        // last position past the destination (10 elements)
        assertThrows(IllegalArgumentException.class,
            () -> k.scatterEscapedGaps(dst, 2, MemorySegment.ofArray(unitsBytes(new short[] {0, 9})), 2, vals, 2, true));
        assertArrayEquals(original, dst.toArray(ValueLayout.JAVA_BYTE));
        assertEquals(2, k.scatterEscapedGaps(dst, 2, MemorySegment.ofArray(unitsBytes(new short[] {0, 8})), 2, vals, 2, false));
        // out-of-range scatter positions are refused rather than written outside the segment
        assertThrows(IllegalArgumentException.class,
            () -> k.scatter(dst, 2, MemorySegment.ofArray(positionsBytes(new long[] {10}, 4)), 4, vals, 1));
        assertThrows(IllegalArgumentException.class,
            () -> k.scatterXor(dst, 4, MemorySegment.ofArray(positionsBytes(new long[] {5}, 8)), 8, vals, 1));
    }

    @Test
    void xorIntoAndOverwriteBytes() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(10);
        for (int n : new int[] {0, 1, 7, 8, 63, 64, 65, 4097}) {
            byte[] a = new byte[n];
            byte[] b = new byte[n];
            rnd.nextBytes(a);
            rnd.nextBytes(b);
            byte[] expected = new byte[n];
            for (int i = 0; i < n; i++) {
                expected[i] = (byte) (a[i] ^ b[i]);
            }
            MemorySegment dst = MemorySegment.ofArray(a.clone());
            k.xorInto(dst, MemorySegment.ofArray(b));
            assertArrayEquals(expected, dst.toArray(ValueLayout.JAVA_BYTE));
        }
        assertThrows(IllegalArgumentException.class, () -> k.xorInto(MemorySegment.ofArray(new byte[3]), MemorySegment.ofArray(new byte[4])));
        byte[] dst = new byte[100];
        int[] offsets = {0, 5, 99, 50};
        byte[] bytes = {1, 2, 3, 4};
        ByteBuffer ob = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        for (int o : offsets) {
            ob.putInt(o);
        }
        MemorySegment d = MemorySegment.ofArray(dst);
        k.overwriteBytes(d, MemorySegment.ofArray(ob.array()), MemorySegment.ofArray(bytes), 4);
        assertEquals(1, dst[0]);
        assertEquals(2, dst[5]);
        assertEquals(3, dst[99]);
        assertEquals(4, dst[50]);
        ob.putInt(4, 100);
        byte[] before = dst.clone();
        assertThrows(IllegalArgumentException.class,
            () -> k.overwriteBytes(d, MemorySegment.ofArray(ob.array()), MemorySegment.ofArray(new byte[] {9, 9, 9, 9}), 4));
        assertArrayEquals(before, dst);
    }

    // ---- checksums --------------------------------------------------------------------------

    @Test
    void xxh3MatchesJavaReference() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(12);
        try (Arena arena = Arena.ofConfined()) {
            for (int len = 0; len < 2100; len += len < 260 ? 1 : 1 + rnd.nextInt(60)) {
                byte[] b = new byte[len];
                rnd.nextBytes(b);
                assertEquals(Xxh3.hash128(b), k.xxh3(MemorySegment.ofArray(b)), "len " + len);
                assertEquals(Xxh3.hash128(b), k.xxh3(nat(arena, b)), "native len " + len);
            }
            byte[] big = new byte[(1 << 20) + 333];
            rnd.nextBytes(big);
            assertEquals(Xxh3.hash128(big), k.xxh3(nat(arena, big)));
        }
        assertEquals("99aa06d3014798d86001c324468d497f", k.xxh3(MemorySegment.ofArray(new byte[0])).hex());
        assertEquals("06b05ab6733a618578af5f94892f3950", k.xxh3(MemorySegment.ofArray(new byte[] {'a', 'b', 'c'})).hex());
    }

    @Test
    void xxh3StreamMatchesOneShotForAnySplit() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(21);
        try (Arena arena = Arena.ofConfined()) {
            for (int trial = 0; trial < 400; trial++) {
                int len = trial < 300 ? trial * 7 : rnd.nextInt(200_000);
                byte[] b = new byte[len];
                rnd.nextBytes(b);
                MemorySegment seg = trial % 2 == 0 ? MemorySegment.ofArray(b) : nat(arena, b);
                Xxh3Stream s = k.newXxh3Stream();
                long at = 0;
                while (at < len) {
                    long step = Math.min(len - at, rnd.nextInt(4) == 0 ? rnd.nextInt(5000) : rnd.nextInt(300));
                    s.update(seg.asSlice(at, step));
                    at += step;
                }
                assertEquals(len, s.length());
                assertEquals(Xxh3.hash128(b), s.digest(), "len " + len);
                assertEquals(Xxh3.hash128(b), s.digest(), "digest leaves the stream unchanged");
            }
            Xxh3Stream s = k.newXxh3Stream().update(MemorySegment.ofArray(new byte[] {1, 2, 3}));
            assertEquals("06b05ab6733a618578af5f94892f3950", s.reset().update(MemorySegment.ofArray(new byte[] {'a', 'b', 'c'})).digest().hex());
            assertEquals("99aa06d3014798d86001c324468d497f", k.newXxh3Stream().digest().hex());
        }
    }

    @Test
    void patchedXxh3EqualsHashOfScatteredCopy() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(22);
        try (Arena arena = Arena.ofConfined()) {
            for (int width : WIDTHS) {
                for (int n : new int[] {0, 1, 7, 100, 8191, 8193, 50_000}) {
                    for (double density : new double[] {0, 0.01, 0.3, 1}) {
                        for (int pw : new int[] {4, 8}) {
                            for (boolean xor : new boolean[] {false, true}) {
                                byte[][] p = pair(rnd, width, n, density);
                                MemorySegment pos = arena.allocate(Math.max(1, (long) n * pw));
                                MemorySegment val = arena.allocate(Math.max(1, (long) n * width));
                                long count = k.diffGather(MemorySegment.ofArray(p[0].clone()), MemorySegment.ofArray(p[1]), width, 0,
                                        pos, pw, val, xor, false);
                                MemorySegment current = nat(arena, p[0]);
                                Hash128 got = k.patchedXxh3(current, width, pos, pw, val, count, xor);
                                assertEquals(Xxh3.hash128(p[1]), got, "width " + width + " n " + n + " density " + density + " xor " + xor);
                                assertArrayEquals(p[0], current.toArray(ValueLayout.JAVA_BYTE), "current is not written");
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void patchedXxh3RefusesPositionsPastTheEnd() {
        DeltaKernels k = kernels();
        MemorySegment current = MemorySegment.ofArray(new byte[64]);
        MemorySegment pos = MemorySegment.ofArray(new int[] {3, 32});
        MemorySegment val = MemorySegment.ofArray(new short[] {1, 2});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> k.patchedXxh3(current, 2, pos, 4, val, 2, false));
        assertTrue(e.getMessage().contains("32"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> k.patchedXxh3(MemorySegment.ofArray(new byte[5]), 2, pos, 4, val, 0, false));
    }

    @Test
    void scatterXxh3WritesHashesAndUndoes() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(23);
        try (Arena arena = Arena.ofConfined()) {
            for (int width : WIDTHS) {
                for (int n : new int[] {0, 1, 7, 8192, 8193, 40_000}) {
                    for (double density : new double[] {0, 0.02, 0.5, 1}) {
                        for (int pw : new int[] {4, 8}) {
                            for (boolean xor : new boolean[] {false, true}) {
                                byte[][] p = pair(rnd, width, n, density);
                                MemorySegment pos = arena.allocate(Math.max(1, (long) n * pw));
                                MemorySegment val = arena.allocate(Math.max(1, (long) n * width));
                                long count = k.diffGather(MemorySegment.ofArray(p[0].clone()), MemorySegment.ofArray(p[1]), width, 0,
                                        pos, pw, val, xor, false);
                                MemorySegment dst = nat(arena, p[0]);
                                MemorySegment undo = arena.allocate(Math.max(1, count * width));
                                Hash128 got = k.scatterXxh3(dst, width, pos, pw, val, count, xor, undo);
                                String what = "width " + width + " n " + n + " density " + density + " xor " + xor;
                                assertEquals(Xxh3.hash128(p[1]), got, what);
                                assertArrayEquals(p[1], dst.toArray(ValueLayout.JAVA_BYTE), what);
                                k.restoreUndo(dst, width, pos, pw, undo, count);
                                assertArrayEquals(p[0], dst.toArray(ValueLayout.JAVA_BYTE), "restored " + what);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void scatterEscapedXxh3WritesHashesAndUndoes() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(25);
        try (Arena arena = Arena.ofConfined()) {
            for (int width : WIDTHS) {
                for (int n : new int[] {1, 7, 8192, 8193, 200_000}) {
                    for (double density : new double[] {0, 0.00001, 0.03, 1}) {
                        for (boolean xor : new boolean[] {false, true}) {
                            byte[][] p = pair(rnd, width, n, density);
                            MemorySegment pos = arena.allocate((long) n * 8);
                            MemorySegment val = arena.allocate((long) n * width);
                            long count = k.diffGather(MemorySegment.ofArray(p[0].clone()), MemorySegment.ofArray(p[1]), width, 0,
                                    pos, 8, val, xor, false);
                            MemorySegment units = arena.allocate(Math.max(2, k.escapedGapUnits(pos, 8, count) * 2));
                            long unitCount = k.encodeEscapedGaps(pos, 8, count, units);
                            MemorySegment dst = nat(arena, p[0]);
                            MemorySegment undo = arena.allocate(Math.max(1, count * width));
                            String what = "width " + width + " n " + n + " density " + density + " xor " + xor;
                            assertEquals(Xxh3.hash128(p[1]), k.scatterEscapedXxh3(dst, width, units, unitCount, val, count, xor, undo), what);
                            assertArrayEquals(p[1], dst.toArray(ValueLayout.JAVA_BYTE), what);
                            k.scatterEscapedGaps(dst, width, units, unitCount, undo, count, false);
                            assertArrayEquals(p[0], dst.toArray(ValueLayout.JAVA_BYTE), "restored " + what);
                        }
                    }
                }
            }
            // a stream pointing past the end is refused before anything is written
            byte[] before = new byte[64];
            MemorySegment dst = MemorySegment.ofArray(before.clone());
            MemorySegment units = MemorySegment.ofArray(new short[] {2, 40});
            assertThrows(IllegalArgumentException.class, () -> k.scatterEscapedXxh3(dst, 2, units, 2,
                    MemorySegment.ofArray(new short[2]), 2, false, MemorySegment.ofArray(new short[2])));
            assertArrayEquals(before, dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void scatterXxh3PastTheEndLeavesDestinationUnchanged() {
        DeltaKernels k = kernels();
        byte[] before = new byte[40_000];
        new SplittableRandom(24).nextBytes(before);
        MemorySegment dst = MemorySegment.ofArray(before.clone());
        // the bad position comes after valid ones in a later block, so some writes happen first
        MemorySegment pos = MemorySegment.ofArray(new int[] {3, 9000, 15_000, 20_000});
        MemorySegment val = MemorySegment.ofArray(new short[] {1, 2, 3, 4});
        MemorySegment undo = MemorySegment.ofArray(new short[4]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> k.scatterXxh3(dst, 2, pos, 4, val, 4, true, undo));
        assertTrue(e.getMessage().contains("20000"), e.getMessage());
        assertArrayEquals(before, dst.toArray(ValueLayout.JAVA_BYTE));
        assertThrows(IllegalArgumentException.class, () -> k.restoreUndo(dst, 2, pos, 4, undo, 4));
        assertArrayEquals(before, dst.toArray(ValueLayout.JAVA_BYTE), "a refused restore writes nothing");
    }

    @Test
    void slimeChecksumParts() {
        DeltaKernels k = kernels();
        SplittableRandom rnd = new SplittableRandom(13);
        for (int n : new int[] {0, 1, 9, 100, 1003}) {
            byte[] b = new byte[n];
            rnd.nextBytes(b);
            long x = 0;
            for (byte v : b) {
                x ^= v & 0xFF;
            }
            assertEquals(x, k.xorBytes(MemorySegment.ofArray(b)));
        }
        for (int n : new int[] {0, 1, 17, 500}) {
            byte[] b = new byte[n * 4];
            rnd.nextBytes(b);
            long bf = 0;
            long f16 = 0;
            long f32 = 0;
            for (int i = 0; i < n; i++) {
                bf ^= Double.doubleToRawLongBits(Float.intBitsToFloat((int) elem(b, 2, i) << 16));
                f16 ^= Double.doubleToRawLongBits(Float.float16ToFloat((short) elem(b, 2, i)));
                f32 ^= Double.doubleToRawLongBits(Float.intBitsToFloat((int) elem(b, 4, i)));
            }
            // Random bits include NaNs; the model above uses the JVM's own widening, which on x86 equals the spec's.
            assertEquals(bf, k.xorWidenedValues(MemorySegment.ofArray(b), Dtype.BF16, n), "bf16 n" + n);
            assertEquals(f16, k.xorWidenedValues(MemorySegment.ofArray(b), Dtype.F16, n), "f16 n" + n);
            assertEquals(f32, k.xorWidenedValues(MemorySegment.ofArray(b), Dtype.F32, n), "f32 n" + n);
        }
        // Signalling NaN: payload kept, quiet bit set.
        byte[] snan = {0x01, (byte) 0x80, (byte) 0x80, 0x7F};
        assertEquals(0x7FF8_0000_0000_0000L | (0x00_8001L << 29), k.xorWidenedValues(MemorySegment.ofArray(snan), Dtype.F32, 1));
        assertThrows(IllegalArgumentException.class, () -> k.xorWidenedValues(MemorySegment.ofArray(new byte[8]), Dtype.F64, 1));
    }

    /** The worked golden value of slime's checksum: p XOR (v << 1) over 65 bits, for a known tiny param. */
    @Test
    void slimeChecksumCombinesToAnUnboundedInteger() {
        DeltaKernels k = kernels();
        byte[] positions = {3, 0, 0, 0, 9, 0, 0, 0};
        byte[] values = {(byte) 0x80, (byte) 0xBF, 0x00, 0x40};
        long p = k.xorBytes(MemorySegment.ofArray(positions));
        long v = k.xorWidenedValues(MemorySegment.ofArray(values), Dtype.BF16, 2);
        BigInteger checksum = BigInteger.valueOf(p).xor(new BigInteger(Long.toUnsignedString(v)).shiftLeft(1));
        long expectedV = Double.doubleToRawLongBits(-1.0) ^ Double.doubleToRawLongBits(2.0);
        assertEquals(BigInteger.valueOf(10).xor(new BigInteger(Long.toUnsignedString(expectedV)).shiftLeft(1)), checksum);
        assertTrue(checksum.bitLength() > 64);
    }
}
