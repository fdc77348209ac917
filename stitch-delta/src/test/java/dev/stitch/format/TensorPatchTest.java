package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TensorPatchTest {

    /** Windowed patching (first, middle and last windows) must give exactly what patching in place gives. */
    @Test
    void windowsMatchInPlace() {
        int width = 2;
        long window = TensorPatch.STREAM_BLOCK;
        int bytes = Math.toIntExact(3 * window + 4096);
        SplittableRandom rnd = new SplittableRandom(7);
        byte[] base = new byte[bytes];
        rnd.nextBytes(base);
        long[] positions = rnd.longs(20_000, 0, bytes / width).sorted().distinct().toArray();
        byte[] values = new byte[positions.length * width];
        rnd.nextBytes(values);
        for (boolean xor : new boolean[] {false, true}) {
            TensorPatch p = TensorPatch.scatter("t", bytes, width, xor, positions, MemorySegment.ofArray(values), null, null);
            byte[] inPlace = base.clone();
            p.applyInPlace(MemorySegment.ofArray(inPlace));
            byte[] windowed = new byte[bytes];
            try (TensorPatch.Windows w = p.windows()) {
                for (long off = 0; off < bytes; off += window) {
                    long n = Math.min(window, bytes - off);
                    w.patch(MemorySegment.ofArray(base).asSlice(off, n), off, MemorySegment.ofArray(windowed).asSlice(off, n));
                }
            }
            assertArrayEquals(inPlace, windowed, "xor=" + xor);
            byte[] oneShot = new byte[bytes];
            try (TensorPatch.Windows w = p.windows()) {
                w.patch(MemorySegment.ofArray(base), 0, MemorySegment.ofArray(oneShot));
            }
            assertArrayEquals(inPlace, oneShot, "one window, xor=" + xor);
            byte b0 = inPlace[(int) (positions[0] * width)];
            byte want = xor ? (byte) (base[(int) (positions[0] * width)] ^ values[0]) : values[0];
            assertArrayEquals(new byte[] {want}, new byte[] {b0});
        }
    }
}
