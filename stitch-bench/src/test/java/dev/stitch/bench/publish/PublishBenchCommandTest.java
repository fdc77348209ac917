package dev.stitch.bench.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class PublishBenchCommandTest {

    private static final List<String> KEYS = List.of("backend", "encoding", "density", "size_bytes", "bytes_written",
            "encode_s", "publish_s", "apply_s", "apply_gbps_model");

    @Test
    void tinyRunCoversEveryBackendAndEncoding(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("publish.json");
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new PublishBenchCommand());
        cl.setErr(new PrintWriter(err));
        int code = cl.execute("--size", "256k", "--density", "0.03", "--reps", "2", "--dir",
                dir.resolve("work").toString(), "--json", json.toString());
        assertEquals(0, code, err.toString());

        JsonNode doc = new ObjectMapper().readTree(json.toFile());
        assertEquals("publish", doc.get("benchmark").asText());
        Set<String> seen = new HashSet<>();
        for (JsonNode row : doc.get("results")) {
            for (String k : KEYS) {
                assertTrue(row.has(k), "row lacks " + k + ": " + row);
            }
            String backend = row.get("backend").asText();
            String encoding = row.get("encoding").asText();
            seen.add(backend + "/" + encoding + "@" + row.get("density").asDouble());
            assertTrue(row.get("publish_s").asDouble() > 0);
            assertTrue(row.get("apply_s").asDouble() > 0);
            assertTrue(row.get("bytes_written").asLong() > 0);
            if (encoding.equals("xor")) {
                assertFalse(row.toString().contains("overwrite"), row.toString());
            }
            if (backend.equals("stitch_delta")) {
                assertTrue(row.get("bytes_vs_deltas_zstd").asDouble() > 0);
                assertTrue(row.get("bytes_written").asLong() < row.get("size_bytes").asLong() / 4);
            }
            if (backend.equals("full")) {
                assertTrue(row.get("bytes_written").asLong() >= row.get("size_bytes").asLong());
            }
            if (backend.equals("stitch_delta") && encoding.equals("xor")) {
                assertTrue(row.get("kernel_s").asDouble() > 0);
                assertTrue(row.get("publish_vs_kernel_write").asDouble() > 0);
            }
        }
        for (String d : List.of("0.03")) {
            for (String c : List.of("sparse_delta/indices", "sparse_delta/deltas", "sparse_delta/deltas_zstd",
                    "disk_delta/xor", "disk_delta/overwrite", "stitch_delta/xor", "stitch_delta/overwrite", "full/full")) {
                assertTrue(seen.contains(c + "@" + d), "missing " + c + " at " + d + " in " + seen);
            }
        }
        assertFalse(Files.exists(dir.resolve("work").resolve("board-full-full-0.03")), "boards are removed after measuring");
    }

    @Test
    void workloadMatchesTheSpecAtFullScale() {
        long elements = 0;
        for (var s : PublishWorkload.specs(1.0)) {
            elements += s.numel();
        }
        assertEquals(536_870_912L, elements);
        assertEquals(19, PublishWorkload.specs(1.0).size());
        try (PublishWorkload w = PublishWorkload.generate(1 << 20)) {
            var next = w.step(0.03, 43);
            long changed = 0;
            long total = 0;
            for (int i = 0; i < next.size(); i++) {
                var a = w.base().get(i).bytes();
                var b = next.get(i).bytes();
                for (long k = 0; k < a.byteSize(); k += 2) {
                    total++;
                    if (a.get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, k) != b.get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, k)) {
                        changed++;
                    }
                }
            }
            double density = (double) changed / total;
            assertTrue(density > 0.025 && density < 0.035, "density " + density);
        }
    }
}
