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
 * {@code stitch bench router} runs a whole rolling update and reports both paths over the same requests. The
 * 409 counts depend on how fast the router's view follows the replicas, so only the shape and the direct path's
 * conflicts (which follow from round-robin alone) are asserted.
 */
class RouterBenchCommandTest {

    @Test
    void reportsDirectAndRoutedConflictsOverTheSameRequests(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("router.json");
        int code = new CommandLine(new RouterBenchCommand()).execute("--replicas", "3", "--versions", "2",
                "--requests-per-step", "6", "--json", json.toString());
        assertEquals(0, code);
        JsonNode results = new ObjectMapper().readTree(json.toFile()).get("results");
        assertEquals(2, results.size());
        assertEquals("direct_round_robin", results.get(0).get("path").asText());
        assertEquals("router", results.get(1).get("path").asText());
        // 3 replicas x (commit begun, commit finished) x 6 requests per path
        assertEquals(36, results.get(0).get("requests").asLong());
        assertEquals(36, results.get(1).get("requests").asLong());
        // while the fleet is split, round-robin sends some pins to the replica on the other version
        assertTrue(results.get(0).get("conflicts_409").asLong() > 0, results.toString());
    }
}
