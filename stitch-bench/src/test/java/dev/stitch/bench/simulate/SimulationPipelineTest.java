package dev.stitch.bench.simulate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulationPipelineTest {

    /**
     * A codec whose stages wait rather than compute, so the overlap of the pipeline can be checked
     * without depending on how busy the machine's cores are.
     */
    private static final class WaitingCodec implements ChunkCodec {
        final int chunks;
        final long encodeMillis;
        final long applyMillis;
        final int failAt;
        final List<Integer> applied = Collections.synchronizedList(new ArrayList<>());

        WaitingCodec(int chunks, long encodeMillis, long applyMillis, int failAt) {
            this.chunks = chunks;
            this.encodeMillis = encodeMillis;
            this.applyMillis = applyMillis;
            this.failAt = failAt;
        }

        @Override
        public String backend() {
            return "test";
        }

        @Override
        public String encoding() {
            return "test";
        }

        @Override
        public int chunks() {
            return chunks;
        }

        @Override
        public List<String> encode(int chunk, Path trainerDir) throws Exception {
            Thread.sleep(encodeMillis);
            if (chunk == failAt) {
                throw new IOException("disk full at chunk " + chunk);
            }
            String name = "c" + chunk + ".bin";
            Files.write(trainerDir.resolve(name), new byte[] {(byte) chunk, 1, 2, 3});
            return List.of(name);
        }

        @Override
        public void apply(int chunk, Path rolloutDir, List<String> files) throws Exception {
            assertArrayEquals(new byte[] {(byte) chunk, 1, 2, 3}, Files.readAllBytes(rolloutDir.resolve(files.getFirst())));
            Thread.sleep(applyMillis);
            applied.add(chunk);
        }

        @Override
        public long encodeCpuNanos() {
            return 0;
        }

        @Override
        public long applyCpuNanos() {
            return 0;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void stagesOverlapSoTimeToServeTracksTheSlowestStage(@TempDir Path dir) throws Exception {
        // Encode 200 ms, transfer ~20 ms (RTT), apply 50 ms per chunk, 10 chunks: the sum is ~2.7 s, the slowest ~2 s.
        // Stage times are far above the scheduler's wake-up latency, which on a busy machine reaches tens of ms.
        SimulationPipeline pipeline = new SimulationPipeline(new ThrottledLink(1e9, 20));
        // A first pass loads and compiles the pipeline's code paths, as the simulation's warm-up pass does.
        pipeline.run(new WaitingCodec(10, 1, 1, -1), dir.resolve("warm-t"), dir.resolve("warm-r"), () -> { });
        WaitingCodec codec = new WaitingCodec(10, 200, 50, -1);
        int[] reloads = new int[1];
        SimulationPipeline.Result r = pipeline.run(codec, dir.resolve("t"), dir.resolve("r"), () -> {
            Thread.sleep(50);
            reloads[0]++;
        });

        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), codec.applied, "chunks are applied in order");
        assertEquals(1, reloads[0]);
        assertEquals(10, r.files());
        assertEquals(40, r.bytes());
        assertTrue(r.encodeS() >= 2.0 && r.applyS() >= 0.5 && r.transferS() >= 0.2, r.toString());
        assertEquals(r.encodeS(), r.slowestStageS(), 1e-9);
        assertTrue(r.timeToServeS() <= 1.2 * r.slowestStageS() + r.reloadS(), "not pipelined: " + r);
        assertTrue(r.timeToServeS() < r.sequentialS(), r.toString());
    }

    @Test
    void aFailingChunkFailsTheRunAndIsNeverApplied(@TempDir Path dir) {
        WaitingCodec codec = new WaitingCodec(6, 1, 1, 3);
        SimulationPipeline pipeline = new SimulationPipeline(new ThrottledLink(1e9, 0));
        IOException e = assertThrows(IOException.class,
                () -> pipeline.run(codec, dir.resolve("t"), dir.resolve("r"), () -> { }));
        assertTrue(e.getMessage().contains("chunk 3"), e.getMessage());
        assertTrue(!codec.applied.contains(3));
    }
}
