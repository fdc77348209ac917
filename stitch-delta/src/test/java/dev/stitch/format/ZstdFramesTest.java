package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.kernels.Kernels;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ZstdFramesTest {

    private static final int SIZE = 1 << 20;

    /** Low bytes of gaps: geometric, skewed but never repeating in runs. */
    private static byte[] gapLowBytes(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] b = new byte[SIZE];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (int) Math.floor(Math.log(1 - r.nextDouble()) / Math.log(0.97));
        }
        return b;
    }

    /** High bytes of gaps: almost all zero. */
    private static byte[] mostlyZero(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] b = new byte[SIZE];
        for (int i = 0; i < b.length; i++) {
            b[i] = r.nextInt(2000) == 0 ? (byte) 1 : 0;
        }
        return b;
    }

    @Test
    void planesAreCodedByTheirByteStatistics() {
        byte[] random = new byte[SIZE];
        new SplittableRandom(3).nextBytes(random);
        try (Arena arena = Arena.ofConfined()) {
            assertTrue(ZstdFrames.Compressor.literalsSuit(offHeap(arena, gapLowBytes(1))));
            assertFalse(ZstdFrames.Compressor.literalsSuit(offHeap(arena, mostlyZero(2))), "one value dominates");
            assertFalse(ZstdFrames.Compressor.literalsSuit(offHeap(arena, random)), "near-random bytes");
            assertFalse(ZstdFrames.Compressor.literalsSuit(offHeap(arena, new byte[63])), "too small to judge");
        }
    }

    @Test
    void everyPlaneFrameDecodesToItsPlane() {
        byte[] random = new byte[SIZE];
        new SplittableRandom(4).nextBytes(random);
        try (Arena arena = Arena.ofConfined(); ZstdFrames.Compressor c = new ZstdFrames.Compressor()) {
            for (byte[] plane : new byte[][] {gapLowBytes(5), mostlyZero(6), random, new byte[100], new byte[1]}) {
                MemorySegment src = offHeap(arena, plane);
                MemorySegment dst = arena.allocate(ZstdFrames.bound(plane.length));
                long n = c.compressPlane(src, dst);
                byte[] frame = dst.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
                assertEquals(plane.length, ZstdFrames.declaredSize(frame, plane.length, "plane"));
                assertArrayEquals(plane, ZstdFrames.decompress(frame, plane.length, "plane"));
            }
        }
    }

    @Test
    void literalsOnlyIsNoLargerThanLevelOneOnSkewedPlanes() {
        try (Arena arena = Arena.ofConfined(); ZstdFrames.Compressor c = new ZstdFrames.Compressor()) {
            MemorySegment src = offHeap(arena, gapLowBytes(7));
            MemorySegment dst = arena.allocate(ZstdFrames.bound(SIZE));
            long plane = c.compressPlane(src, dst);
            long levelOne = c.compress(src, dst);
            if (Kernels.zstdLiteralsProducer().isPresent()) {
                assertTrue(plane <= levelOne, "literals only " + plane + " vs level 1 " + levelOne);
            } else {
                assertEquals(levelOne, plane, "without the native producer every plane is level 1");
            }
            MemorySegment zeros = offHeap(arena, mostlyZero(8));
            assertEquals(c.compress(zeros, dst), c.compressPlane(zeros, dst), "dominated planes keep the match search");
        }
    }

    private static MemorySegment offHeap(Arena arena, byte[] bytes) {
        MemorySegment s = arena.allocate(Math.max(1, bytes.length)).asSlice(0, bytes.length);
        MemorySegment.copy(bytes, 0, s, ValueLayout.JAVA_BYTE, 0, bytes.length);
        return s;
    }

    /** A declared size is checked against what the frame's bytes can hold before anything is allocated. */
    @Test
    void frameCannotDeclareMoreThanItsBlocksHold() {
        byte[] zeros = ZstdFrames.compress(new byte[16 << 20]);
        assertTrue(16 << 20 <= ZstdFrames.maxContentSize(zeros.length), "the most compressible frame stays within the limit");
        assertArrayEquals(new byte[16 << 20], ZstdFrames.decompress(zeros, 16 << 20, "zeros"));
        // magic, single-segment descriptor with an 8-byte content size of 2 GiB - 2048, one empty raw last block
        byte[] liar = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN)
            .putInt(0xFD2FB528).put((byte) 0xE0).putLong((1L << 31) - 2048).put(new byte[] {1, 0, 0}).array();
        DeltaFormatException e = assertThrows(DeltaFormatException.class, () -> ZstdFrames.decompress(liar, ZstdFrames.MAX_ONE_SHOT, "liar"));
        assertTrue(e.getMessage().contains("more than such a frame can hold"), e.getMessage());
        assertEquals(Long.MAX_VALUE, ZstdFrames.maxContentSize(Long.MAX_VALUE), "saturates instead of overflowing");
    }
}
