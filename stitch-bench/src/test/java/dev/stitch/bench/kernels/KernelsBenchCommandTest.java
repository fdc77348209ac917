package dev.stitch.bench.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.cli.StitchCli;
import dev.stitch.kernels.Kernels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A tiny run of {@code stitch bench kernels}: every measurement runs, validates and lands in the JSON. */
class KernelsBenchCommandTest {

    @Test
    void smokeRunWritesRowsForEveryKernelImplAndTheFloor(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("kernels.json");
        int code = StitchCli.commandLine().execute("bench", "kernels", "--size", "2m", "--density", "0.03",
            "--threads", "1,2", "--iterations", "1", "--warmup", "0", "--json", json.toString());
        assertEquals(0, code);
        JsonNode doc = new ObjectMapper().readTree(Files.readString(json));
        assertEquals("kernels", doc.get("benchmark").asText());
        Set<String> seen = new HashSet<>();
        for (JsonNode row : doc.get("results")) {
            for (String key : List.of("kernel", "impl", "threads", "density", "size_bytes", "gbps_model", "floor_fraction")) {
                assertTrue(row.has(key), key + " missing in " + row);
            }
            assertEquals(2L << 20, row.get("size_bytes").asLong());
            assertTrue(row.get("gbps_model").asDouble() > 0, row.toString());
            assertTrue(row.get("floor_fraction").asDouble() > 0, row.toString());
            seen.add(row.get("kernel").asText() + "/" + row.get("impl").asText() + "/" + row.get("threads").asInt());
        }
        String nativeOrJava = Kernels.nativeAvailable() ? "native" : "java";
        assertTrue(seen.contains("floor/" + nativeOrJava + "/1"), seen.toString());
        for (String kernel : List.of("encode", "apply")) {
            for (int t : new int[] {1, 2}) {
                assertTrue(seen.contains(kernel + "/java/" + t), seen.toString());
                if (Kernels.nativeAvailable()) {
                    assertTrue(seen.contains(kernel + "/native/" + t), seen.toString());
                }
            }
        }
    }

    @Test
    void rejectsBadArguments() {
        assertNotEquals(0, StitchCli.commandLine().execute("bench", "kernels", "--size", "12q"));
        assertNotEquals(0, StitchCli.commandLine().execute("bench", "kernels", "--density", "1.5"));
        assertNotEquals(0, StitchCli.commandLine().execute("bench", "kernels", "--impl", "gpu"));
    }

    @Test
    void floorFollowsTheSpecFormula() {
        // docs/performance-targets.md §7.3: B_r 17.6 and B_w 10.0 GB/s give 5.41 (encode) and 9.73 (apply) GB/s at 3% bf16.
        TrafficFloor floor = new TrafficFloor(17.6, 10.0);
        assertEquals(5.41, floor.encodeGbps(2, 0.03), 0.01);
        assertEquals(9.73, floor.applyGbps(2, 0.03), 0.01);
        assertEquals(6.94, floor.encodeGbps(2, 0.01), 0.01);
        assertEquals(22.3, floor.applyGbps(2, 0.01), 0.1);
        assertEquals(0.623, TrafficFloor.dirtyLines(2, 0.03), 0.001);
    }

    @Test
    void workloadMatchesSpecShapeAndChangeModel() {
        List<KernelWorkload.Tensor> layout = KernelWorkload.layout(1L << 29);
        assertEquals(19, layout.size());
        assertEquals(32252L * 4096, layout.get(0).elements());
        assertEquals(1L << 29, layout.stream().mapToLong(KernelWorkload.Tensor::elements).sum());
        assertEquals(2L << 19, KernelWorkload.layout(2L << 19).stream().mapToLong(KernelWorkload.Tensor::elements).sum());
        // RNE rounding to bf16
        assertEquals((short) 0x3F80, KernelWorkload.bf16(1.0));
        assertEquals((short) 0x3F80, KernelWorkload.bf16(Float.intBitsToFloat(0x3F808000)));
        assertEquals((short) 0x3F82, KernelWorkload.bf16(Float.intBitsToFloat(0x3F818000)));
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
        for (int i = 0; i < 10_000; i++) {
            int bits = rnd.nextInt(0x10000);
            if ((bits & 0x7F80) == 0x7F80) {
                continue;
            }
            int changed = KernelWorkload.change(bits, rnd);
            assertNotEquals(bits, changed);
            assertEquals(bits & 0x8000, changed & 0x8000);
            assertTrue(Math.abs(changed - bits) <= 4);
        }
    }
}
