package dev.stitch.bench.simulate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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

    private static final List<String> KEYS = List.of("backend", "encoding", "mode", "model_params", "density", "link_mbps",
            "time_to_serve_s", "slowest_stage_s", "reload_s", "in_place_apply_s", "encode_s", "transfer_s", "apply_s", "bytes",
            "sequential_s", "dominant_stage", "extrapolated", "encode_s_per_gib_core", "apply_s_per_gib_core", "bytes_per_gib",
            "engine_applies_in_place");

    @Test
    void tinyRunMeasuresEveryBackendInHostAndEngineModeAndMeetsThePipeliningTarget(@TempDir Path dir) throws Exception {
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
        Set<String> measuredHost = new HashSet<>();
        Set<String> measuredEngine = new HashSet<>();
        int extrapolatedHost = 0;
        int extrapolatedEngine = 0;
        for (JsonNode row : rows) {
            for (String k : KEYS) {
                assertTrue(row.has(k), "row lacks " + k + ": " + row);
            }
            String spec = row.get("backend").asText() + ":" + row.get("encoding").asText();
            boolean engine = row.get("mode").asText().equals("engine");
            assertTrue(engine || row.get("mode").asText().equals("host"), row.toString());
            assertEquals(row.get("backend").asText().equals("sparse_delta"), row.get("engine_applies_in_place").asBoolean(), spec);
            double tts = row.get("time_to_serve_s").asDouble();
            double slowest = row.get("slowest_stage_s").asDouble();
            double reload = row.get("reload_s").asDouble();
            double inPlace = row.get("in_place_apply_s").asDouble();
            double encode = row.get("encode_s").asDouble();
            double transfer = row.get("transfer_s").asDouble();
            double apply = row.get("apply_s").asDouble();
            double pause = reload + inPlace;
            String dominant = row.get("dominant_stage").asText();
            assertTrue(TimeToServeModel.STAGES.contains(dominant), row.toString());
            assertEquals(TimeToServeModel.dominantStage(encode, transfer, apply, reload, inPlace), dominant, row.toString());
            if (engine) {
                // The patched engine applies the delta itself: no host apply, no reload, an in-place pause.
                assertEquals(0, apply);
                assertEquals(0, reload);
                assertTrue(inPlace > 0 && row.get("in_place_apply_s_per_gib_core").asDouble() > 0, row.toString());
            } else {
                assertEquals(0, inPlace);
                assertTrue(reload > 0 && row.get("reload_gbps").asDouble() > 0, row.toString());
            }
            assertTrue(tts > 0 && slowest > 0, row.toString());
            assertEquals(Math.max(encode, Math.max(transfer, apply)), slowest, 1e-9);
            assertEquals(encode + transfer + apply + pause, row.get("sequential_s").asDouble(), 1e-6);
            assertEquals(tts <= 1.2 * slowest + pause, row.get("meets_pipeline_target").asBoolean());
            // The last chunk's transfer and the engine's pause follow everything else, so nothing is served sooner.
            assertTrue(tts >= slowest + pause - 1e-9, row.toString());
            if (row.get("extrapolated").asBoolean()) {
                // The model: slowest stage plus one chunk of each other stage, well inside the target.
                assertTrue(tts <= 1.2 * slowest + pause, "pipelining target missed: " + row);
                assertTrue(tts < row.get("sequential_s").asDouble(), row.toString());
                assertEquals(7e9, row.get("model_params").asDouble());
                assertEquals(16, row.get("rollout_cores").asInt());
                if (engine) {
                    extrapolatedEngine++;
                } else {
                    extrapolatedHost++;
                    assertEquals(SimulateCommand.DEFAULT_RELOAD_GBPS, row.get("reload_gbps").asDouble());
                    assertEquals("--reload-gbps", row.get("reload_gbps_source").asText());
                }
            } else {
                (engine ? measuredEngine : measuredHost).add(spec);
                assertEquals(40, row.get("link_mbps").asDouble());
            }
        }
        assertEquals(Set.of("full:full", "sparse_delta:deltas_zstd", "disk_delta:xor", "disk_delta:overwrite",
                "stitch_delta:xor", "stitch_delta:overwrite"), measuredHost);
        assertEquals(Set.of("sparse_delta:deltas_zstd"), measuredEngine);
        assertEquals(2 * measuredHost.size(), extrapolatedHost);
        assertEquals(2 * measuredEngine.size(), extrapolatedEngine);

        // A delta moves a small fraction of what a full checkpoint moves, and gets served sooner at 70B/40 MB/s.
        JsonNode full = find(rows, "full", "full", "host", true, 40);
        JsonNode delta = find(rows, "disk_delta", "xor", "host", true, 40);
        assertTrue(delta.get("bytes").asDouble() < 0.2 * full.get("bytes").asDouble());
        assertTrue(delta.get("time_to_serve_s").asDouble() < full.get("time_to_serve_s").asDouble());
        // Both modes move the same files; only the pause differs.
        JsonNode host = find(rows, "sparse_delta", "deltas_zstd", "host", true, 400);
        JsonNode engine = find(rows, "sparse_delta", "deltas_zstd", "engine", true, 400);
        assertEquals(host.get("bytes").asLong(), engine.get("bytes").asLong());
        assertEquals(host.get("transfer_s").asDouble(), engine.get("transfer_s").asDouble(), 1e-9);
        assertFalse(Files.exists(dir.resolve("work/full")), "per-run directories are removed");
    }

    @Test
    void engineModeServesSoonerWhenTheReloadDominates(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("simulate.json");
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(new SimulateCommand());
        cl.setErr(new PrintWriter(err));
        // A slow reload (0.05 GB/s, 280 s for 14 GB) makes the reload the host mode's dominant stage.
        int code = cl.execute("--model-params", "7e9", "--link-mbps", "3000", "--rtt-ms", "1", "--measure-size", "4m",
                "--chunks", "4", "--backends", "sparse_delta:deltas_zstd,sparse_delta:indices,stitch_delta:xor",
                "--reload-gbps", "0.05", "--work-dir", dir.resolve("work").toString(), "--json", json.toString());
        assertEquals(0, code, err.toString());
        JsonNode rows = new ObjectMapper().readTree(json.toFile()).get("results");
        int compared = 0;
        for (String encoding : new String[] {"deltas_zstd", "indices"}) {
            JsonNode host = find(rows, "sparse_delta", encoding, "host", true, 3000);
            JsonNode engine = find(rows, "sparse_delta", encoding, "engine", true, 3000);
            assertEquals("reload", host.get("dominant_stage").asText(), host.toString());
            assertTrue(engine.get("time_to_serve_s").asDouble() < host.get("time_to_serve_s").asDouble(),
                    engine + " vs " + host);
            compared++;
        }
        assertEquals(2, compared);
        for (JsonNode r : rows) {
            if (r.get("backend").asText().equals("stitch_delta")) {
                assertEquals("host", r.get("mode").asText(), "stitch_delta has no engine mode: " + r);
            }
        }
    }

    @Test
    void reloadBandwidthIsAnExplicitAssumptionOrMeasured() {
        SimulateCommand defaults = new SimulateCommand();
        new CommandLine(defaults).parseArgs();
        assertEquals(SimulateCommand.DEFAULT_RELOAD_GBPS, defaults.plan().reloadGbps());
        SimulateCommand measured = new SimulateCommand();
        new CommandLine(measured).parseArgs("--reload-gbps", "measured");
        assertNull(measured.plan().reloadGbps());
        SimulateCommand given = new SimulateCommand();
        new CommandLine(given).parseArgs("--reload-gbps", "7.5");
        assertEquals(7.5, given.plan().reloadGbps());
        String help = new CommandLine(new SimulateCommand()).getUsageMessage();
        assertTrue(help.contains("ASSUMPTION") && help.contains("measured"), help);
    }

    @Test
    void badOptionsFailWithOneLine() {
        for (String[] args : new String[][] {
            {"--model-params", "seventy"}, {"--density", "0"}, {"--link-mbps", "-5"}, {"--measure-size", "12q"},
            {"--backends", "tarball"}, {"--chunks", "0"}, {"--reload-gbps", "fast"}, {"--reload-gbps", "0"}}) {
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

    private static JsonNode find(JsonNode rows, String backend, String encoding, String mode, boolean extrapolated, double link) {
        for (JsonNode r : rows) {
            if (r.get("backend").asText().equals(backend) && r.get("encoding").asText().equals(encoding)
                    && r.get("mode").asText().equals(mode) && r.get("extrapolated").asBoolean() == extrapolated
                    && r.get("link_mbps").asDouble() == link) {
                return r;
            }
        }
        throw new AssertionError("no " + mode + " row " + backend + "/" + encoding);
    }
}
