package dev.stitch.bench.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.cli.StitchCli;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Smoke test of {@code stitch bench proxy} with tiny durations: a real sidecar child process, real rows. */
class ProxyBenchCommandTest {

    @Test
    void writesDirectAndSidecarRowsForEveryRateAndSaturation(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("proxy.json");
        int code = StitchCli.commandLine().execute("bench", "proxy", "--rps", "50", "--duration-s", "0.5",
                "--warmup-s", "0.3", "--connections", "4", "--concurrency", "2", "--json", out.toString());
        assertEquals(0, code);
        JsonNode doc = new ObjectMapper().readTree(out.toFile());
        assertEquals("proxy", doc.path("benchmark").asText());
        List<String> keys = new ArrayList<>();
        for (JsonNode row : doc.path("results")) {
            keys.add(row.path("path").asText() + "@" + row.path("rps_offered").asInt());
            assertEquals(0, row.path("errors").asLong(), row.toString());
            assertTrue(row.path("requests").asLong() > 0, row.toString());
            assertTrue(row.path("p99_ms").asDouble() >= row.path("p50_ms").asDouble(), row.toString());
            assertTrue(row.path("rps_achieved").asDouble() > 0, row.toString());
            if (row.path("path").asText().equals("sidecar")) {
                assertTrue(row.path("proxy_cpu_ms_per_req").isNumber(), row.toString());
            }
        }
        assertEquals(List.of("direct@50", "sidecar@50", "direct@0", "sidecar@0"), keys);
    }
}
