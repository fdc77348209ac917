package dev.stitch.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Chunking and threading never change a result. */
class ChunkedKernelsTest {

    @Test
    void resultsAreIndependentOfChunkSizeAndThreads() {
        SplittableRandom rnd = new SplittableRandom(99);
        for (DeltaKernels k : new DeltaKernels[] {Kernels.java(), Kernels.get()}) {
            for (int width : new int[] {1, 2, 4, 8}) {
                int n = 16_000 / width * 2 + 13;
                byte[][] p = DeltaKernelsContract.pair(rnd, width, n, 0.05);
                long[] pos = DeltaKernelsContract.changed(p[0], p[1], width);
                byte[] expectedPositions = DeltaKernelsContract.positionsBytes(Arrays.stream(pos).map(i -> i + 7).toArray(), 4);
                for (int threads : new int[] {1, 2, 3}) {
                    for (long chunk : new long[] {64, 192, 4096, 1 << 20}) {
                        try (ChunkedKernels c = ChunkedKernels.withThreads(k, threads, chunk)) {
                            MemorySegment old = MemorySegment.ofArray(p[0].clone());
                            MemorySegment neu = MemorySegment.ofArray(p[1]);
                            assertEquals(pos.length, c.countChanged(old, neu, width));
                            MemorySegment positions = MemorySegment.ofArray(new byte[n * 4]);
                            MemorySegment values = MemorySegment.ofArray(new byte[n * width]);
                            long got = c.diffGather(old, neu, width, 7, positions, 4, values, true, true);
                            assertEquals(pos.length, got);
                            assertArrayEquals(expectedPositions, Arrays.copyOf(positions.toArray(ValueLayout.JAVA_BYTE), pos.length * 4));
                            assertArrayEquals(p[1], old.toArray(ValueLayout.JAVA_BYTE));
                            // xor values applied back onto the old bytes rebuild the new ones
                            MemorySegment dst = MemorySegment.ofArray(p[0].clone());
                            MemorySegment unshifted = MemorySegment.ofArray(DeltaKernelsContract.positionsBytes(pos, 4));
                            c.scatterXor(dst, width, unshifted, 4, values, got);
                            assertArrayEquals(p[1], dst.toArray(ValueLayout.JAVA_BYTE));
                            MemorySegment payload = MemorySegment.ofArray(p[1]);
                            MemorySegment dense = MemorySegment.ofArray(p[0].clone());
                            c.xorInto(dense, payload);
                            c.xorInto(dense, payload);
                            assertArrayEquals(p[0], dense.toArray(ValueLayout.JAVA_BYTE));
                            assertEquals(k.streamRead(payload), c.streamRead(payload));
                        }
                    }
                }
            }
        }
    }

    @Test
    void failuresInAChunkReachTheCaller() {
        try (ChunkedKernels c = ChunkedKernels.withThreads(Kernels.get(), 2, 64)) {
            MemorySegment dst = MemorySegment.ofArray(new byte[200]);
            long[] pos = new long[100];
            for (int i = 0; i < 100; i++) {
                pos[i] = i;
            }
            pos[99] = 1000;
            assertThrows(IllegalArgumentException.class,
                () -> c.scatter(dst, 2, MemorySegment.ofArray(DeltaKernelsContract.positionsBytes(pos, 4)), 4, MemorySegment.ofArray(new byte[200]), 100));
        }
        assertThrows(IllegalArgumentException.class, () -> ChunkedKernels.withThreads(Kernels.get(), 0, 64));
    }
}
