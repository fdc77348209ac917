package dev.stitch.bench.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code stitch bench router} end to end at a small scale: real replicas, the router as a child process, one
 * rolling update, a short overhead phase. Only the output's keys and the invariants are asserted (no 409 among
 * satisfiable pins through the router, nothing mislabeled); latency and CPU figures are the benchmark's job.
 */
class RouterBenchCommandTest {

    @Test
    void reportsTheIssuesKeysWithNoRoutedConflictAndNothingMislabeled(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("router.json");
        int code = new CommandLine(new RouterBenchCommand()).execute("--replicas", "3", "--versions", "1", "--clients", "2",
                "--rps", "50", "--duration-s", "1", "--model-size", "2m", "--json", json.toString());
        assertEquals(0, code);
        JsonNode summary = null;
        for (JsonNode r : new ObjectMapper().readTree(json.toFile()).get("results")) {
            if (r.path("phase").asText().equals("summary")) {
                summary = r;
            }
        }
        assertTrue(summary != null, "no summary row");
        for (String key : new String[] {"router_409_rate", "direct_409_rate", "mislabeled", "router_added_p99_ms",
                "router_cpu_ms_per_request", "held_previous_served"}) {
            assertTrue(summary.has(key), key + " missing from " + summary);
        }
        assertEquals(0.0, summary.get("router_409_rate").asDouble(), summary.toString());
        assertEquals(0, summary.get("mislabeled").asLong(), summary.toString());
    }
}
