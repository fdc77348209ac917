package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.testing.HeapAllocation;
import java.util.Arrays;

/**
 * Fuzzes the zstd frame reader (docs/formats/common.md §0.3): only {@link DeltaFormatException} escapes,
 * heap use follows what the frame's bytes can hold and never its declared size, the
 * one-shot and in-place decoders agree, and decoded bytes survive a compress/decompress round trip.
 */
class ZstdFramesFuzzTest {

    /** The largest bound any reader passes, so only the frame's own length limits what it may allocate. */
    private static final long BOUND = ZstdFrames.MAX_ONE_SHOT;
    /** Heap per input byte: four times what a frame can hold per byte, for the output, its recompression and its re-read. */
    private static final long PER_INPUT_BYTE = ZstdFrames.maxContentSize(4) + 16;
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
            heap.assertAtMost(PER_INPUT_BYTE, input.length, 1 << 20, "a refused frame");
            return;
        }
        heap.assertAtMost(PER_INPUT_BYTE, input.length, 1 << 20, "an accepted frame");
        assertTrue(out.length <= ZstdFrames.maxContentSize(input.length),
                "decoded " + out.length + " bytes, more than " + input.length + " frame bytes can hold");
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
