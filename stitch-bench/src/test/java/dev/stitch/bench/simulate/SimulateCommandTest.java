package dev.stitch.bench.simulate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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

class SimulateCommandTest {

    private static final List<String> KEYS = List.of("backend", "encoding", "model_params", "density", "link_mbps",
            "time_to_serve_s", "slowest_stage_s", "reload_s", "encode_s", "transfer_s", "apply_s", "bytes",
            "sequential_s", "extrapolated", "encode_s_per_gib_core", "apply_s_per_gib_core", "bytes_per_gib");

    @Test
    void tinyRunMeasuresEveryBackendAndMeetsThePipeliningTarget(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("simulate.json");
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new SimulateCommand());
        cl.setErr(new PrintWriter(err));
        int code = cl.execute("--model-params", "7e9", "--density", "0.03", "--link-mbps", "40,400", "--rtt-ms", "1",
                "--measure-size", "8m", "--chunks", "8", "--trainer-cores", "32", "--rollout-cores", "16",
                "--work-dir", dir.resolve("work").toString(), "--json", json.toString());
        assertEquals(0, code, err.toString());

        JsonNode doc = new ObjectMapper().readTree(json.toFile());
        assertEquals("simulate", doc.get("benchmark").asText());
        JsonNode rows = doc.get("results");
        Set<String> measured = new HashSet<>();
        int extrapolated = 0;
        for (JsonNode row : rows) {
            for (String k : KEYS) {
                assertTrue(row.has(k), "row lacks " + k + ": " + row);
            }
            double tts = row.get("time_to_serve_s").asDouble();
            double slowest = row.get("slowest_stage_s").asDouble();
            double reload = row.get("reload_s").asDouble();
            double encode = row.get("encode_s").asDouble();
            double transfer = row.get("transfer_s").asDouble();
            double apply = row.get("apply_s").asDouble();
            assertTrue(tts > 0 && slowest > 0 && reload > 0, row.toString());
            assertEquals(Math.max(encode, Math.max(transfer, apply)), slowest, 1e-9);
            assertEquals(encode + transfer + apply + reload, row.get("sequential_s").asDouble(), 1e-6);
            assertEquals(tts <= 1.2 * slowest + reload, row.get("meets_pipeline_target").asBoolean());
            // The last chunk's apply and the reload follow everything else, so nothing is served sooner.
            assertTrue(tts >= slowest + reload - 1e-9, row.toString());
            if (row.get("extrapolated").asBoolean()) {
                // The model: slowest stage plus one chunk of each other stage, well inside the target.
                assertTrue(tts <= 1.2 * slowest + reload, "pipelining target missed: " + row);
                assertTrue(tts < row.get("sequential_s").asDouble(), row.toString());
                extrapolated++;
                assertEquals(7e9, row.get("model_params").asDouble());
                assertEquals(16, row.get("rollout_cores").asInt());
            } else {
                measured.add(row.get("backend").asText() + ":" + row.get("encoding").asText());
                assertEquals(40, row.get("link_mbps").asDouble());
            }
        }
        assertEquals(Set.of("full:full", "sparse_delta:deltas_zstd", "disk_delta:xor", "disk_delta:overwrite",
                "stitch_delta:xor", "stitch_delta:overwrite"), measured);
        assertEquals(2 * measured.size(), extrapolated);

        // A delta moves a small fraction of what a full checkpoint moves, and gets served sooner at 70B/40 MB/s.
        JsonNode full = find(rows, "full", "full", true, 40);
        JsonNode delta = find(rows, "disk_delta", "xor", true, 40);
        assertTrue(delta.get("bytes").asDouble() < 0.2 * full.get("bytes").asDouble());
        assertTrue(delta.get("time_to_serve_s").asDouble() < full.get("time_to_serve_s").asDouble());
        assertFalse(Files.exists(dir.resolve("work/full")), "per-run directories are removed");
    }

    @Test
    void badOptionsFailWithOneLine() {
        for (String[] args : new String[][] {
            {"--model-params", "seventy"}, {"--density", "0"}, {"--link-mbps", "-5"}, {"--measure-size", "12q"},
            {"--backends", "tarball"}, {"--chunks", "0"}}) {
            StringWriter err = new StringWriter();
            CommandLine cl = new CommandLine(new SimulateCommand());
            cl.setErr(new PrintWriter(err));
            cl.setExecutionExceptionHandler((ex, line, parse) -> {
                line.getErr().println(ex.getMessage());
                return 1;
            });
            assertNotEquals(0, cl.execute(args), String.join(" ", args));
            assertFalse(err.toString().isBlank());
        }
    }

    private static JsonNode find(JsonNode rows, String backend, String encoding, boolean extrapolated, double link) {
        for (JsonNode r : rows) {
            if (r.get("backend").asText().equals(backend) && r.get("encoding").asText().equals(encoding)
                    && r.get("extrapolated").asBoolean() == extrapolated && r.get("link_mbps").asDouble() == link) {
                return r;
            }
        }
        throw new AssertionError("no row " + backend + "/" + encoding);
    }
}
