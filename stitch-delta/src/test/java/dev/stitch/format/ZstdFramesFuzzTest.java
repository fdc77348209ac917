package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.testing.HeapAllocation;
import java.util.Arrays;

/**
 * Fuzzes the zstd frame reader (delta-formats.md 0.3): only {@link DeltaFormatException} escapes, no
 * output exceeds the caller's bound and nothing near a larger declared size is allocated, the
 * one-shot and in-place decoders agree, and decoded bytes survive a compress/decompress round trip.
 */
class ZstdFramesFuzzTest {

    /** The caller's bound on a frame's content (the readers pass tensor or file sizes). */
    private static final long BOUND = 1 << 20;
    /** Where the in-place decoder is pointed inside larger arrays, to catch offset arithmetic. */
    private static final int OFFSET = 5;

    static {
        HeapAllocation.warmUp(ZstdFramesFuzzTest.class, "zstdFrames", input -> new ZstdFramesFuzzTest().zstdFrames(input));
    }

    @FuzzTest
    void zstdFrames(byte[] input) {
        HeapAllocation heap = HeapAllocation.start();
        byte[] out;
        try {
            out = ZstdFrames.decompress(input, BOUND, "fuzzed frame");
        } catch (DeltaFormatException refused) {
            heap.assertAtMost(8, input.length, 2 * BOUND, "a refused frame");
            return;
        }
        heap.assertAtMost(8, input.length, 2 * BOUND, "an accepted frame");
        assertTrue(out.length <= BOUND, "decoded " + out.length + " bytes past the bound " + BOUND);
        assertEquals(out.length, ZstdFrames.declaredSize(input, BOUND, "fuzzed frame"));

        byte[] src = new byte[OFFSET + input.length + OFFSET];
        System.arraycopy(input, 0, src, OFFSET, input.length);
        byte[] dst = new byte[OFFSET + out.length + OFFSET];
        ZstdFrames.decompressInto(src, OFFSET, input.length, dst, OFFSET, out.length, "fuzzed frame in place");
        assertArrayEquals(out, Arrays.copyOfRange(dst, OFFSET, OFFSET + out.length), "in-place decoding differs");

        byte[] again = ZstdFrames.compress(out);
        assertArrayEquals(out, ZstdFrames.decompress(again, out.length, "recompressed frame"), "round trip changed the bytes");
    }
}
