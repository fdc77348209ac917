package dev.stitch.format;
import dev.stitch.digest.Digests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.github.luben.zstd.Zstd;
import dev.stitch.hash.Xxh3;
import dev.stitch.kernels.Kernels;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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

    /** Every kind of patch: the digest computed without writing, the fused write-and-hash, the plain write and the undo agree. */
    @Test
    void everyKindDigestsWritesAndUndoesConsistently() {
        int width = 2;
        int bytes = 3 * (256 << 10) + 6144;
        SplittableRandom rnd = new SplittableRandom(11);
        byte[] base = new byte[bytes];
        rnd.nextBytes(base);
        long[] positions = rnd.longs(30_000, 0, bytes / width).sorted().distinct().toArray();
        positions[positions.length - 1] = bytes / width - 1;
        byte[] values = new byte[positions.length * width];
        rnd.nextBytes(values);
        byte[] dense = new byte[bytes];
        rnd.nextBytes(dense);
        MemorySegment pos = MemorySegment.ofArray(positions);
        MemorySegment units = MemorySegment.ofArray(new byte[Math.toIntExact(Kernels.get().escapedGapUnits(pos, 8, positions.length) * 2)]);
        long unitCount = Kernels.get().encodeEscapedGaps(pos, 8, positions.length, units);
        List<TensorPatch> patches = new ArrayList<>();
        for (boolean xor : new boolean[] {false, true}) {
            patches.add(TensorPatch.scatter("s", bytes, width, xor, positions, MemorySegment.ofArray(values), "0", Digests.XXH3_128));
            patches.add(TensorPatch.scatterEscaped("e", bytes, width, xor, units, unitCount, MemorySegment.ofArray(values), positions.length,
                "0", Digests.XXH3_128));
        }
        patches.add(TensorPatch.dense("d", width, true, MemorySegment.ofArray(dense), "0", Digests.XXH3_128));
        patches.add(TensorPatch.denseXorFrame("f", bytes, Zstd.compress(dense, 1), "0", Digests.XXH3_128));
        patches.add(TensorPatch.dense("set", width, false, MemorySegment.ofArray(dense), "0", Digests.XXH3_128));
        for (TensorPatch p : patches) {
            byte[] written = base.clone();
            p.applyInPlace(MemorySegment.ofArray(written));
            String want = Xxh3.hash128(written).hex();
            assertEquals(want, p.newDigest(MemorySegment.ofArray(base.clone())), p.kind() + ": digest without writing");
            if (!p.checkedWhileWriting()) {
                assertEquals(TensorPatch.Kind.DENSE_SET, p.kind());
                continue;
            }
            byte[] fused = base.clone();
            TensorPatch.Written w = p.applyAndDigest(MemorySegment.ofArray(fused), java.lang.foreign.Arena.ofAuto());
            assertEquals(want, w.digest(), p.kind() + ": fused digest");
            assertArrayEquals(written, fused, p.kind() + ": fused bytes");
            w.undo().run();
            assertArrayEquals(base, fused, p.kind() + ": undo");
        }
    }

    /** A payload that breaks part way through leaves the tensor as it was. */
    @Test
    void malformedPayloadsAreUndoneBeforeTheErrorLeaves() {
        int bytes = 5 * (256 << 10);
        byte[] base = new byte[bytes];
        new SplittableRandom(12).nextBytes(base);
        byte[] payload = new byte[bytes];
        new SplittableRandom(13).nextBytes(payload);
        byte[] frame = Zstd.compress(payload, 1);
        // a frame that ends early: its header still declares the full size
        TensorPatch truncated = TensorPatch.denseXorFrame("f", bytes, Arrays.copyOf(frame, frame.length * 2 / 3), "0", Digests.XXH3_128);
        byte[] t = base.clone();
        assertThrows(DeltaFormatException.class, () -> truncated.applyAndDigest(MemorySegment.ofArray(t), java.lang.foreign.Arena.ofAuto()));
        assertArrayEquals(base, t);
        // a gap stream that runs past the tensor is refused before the first write
        MemorySegment units = MemorySegment.ofArray(new short[] {5, (short) 0xFFFE});
        TensorPatch past = TensorPatch.scatterEscaped("e", 64, 2, true, units, 2, MemorySegment.ofArray(new short[2]), 2, "0",
            Digests.XXH3_128);
        byte[] small = Arrays.copyOf(base, 64);
        assertThrows(DeltaFormatException.class, () -> past.applyAndDigest(MemorySegment.ofArray(small), java.lang.foreign.Arena.ofAuto()));
        assertArrayEquals(Arrays.copyOf(base, 64), small);
    }
}
