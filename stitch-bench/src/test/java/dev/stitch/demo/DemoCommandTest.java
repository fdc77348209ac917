package dev.stitch.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.cli.StitchCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs {@code stitch demo} end to end at a small size and checks the JSON summary it writes. */
class DemoCommandTest {

    @TempDir
    Path tmp;

    private JsonNode runDemo(String... extra) throws Exception {
        Path json = tmp.resolve("summary.json");
        Path work = tmp.resolve("work");
        String[] base = {"demo", "--size", "16m", "--versions", "3", "--interval-ms", "200", "--work-dir", work.toString(),
            "--json", json.toString()};
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        StringWriter err = new StringWriter();
        int code = StitchCli.commandLine().setErr(new PrintWriter(err)).execute(args);
        assertEquals(0, code, "demo failed: " + err);
        JsonNode s = new ObjectMapper().readTree(json.toFile());
        // Without --keep the board and checkpoints are removed again.
        assertFalse(Files.exists(work.resolve("board")), "board left behind");
        return s;
    }

    private static void assertHealthy(JsonNode s) {
        assertEquals(3, s.path("versions").asInt());
        assertEquals(0, s.path("mislabeled").asLong(-1));
        assertTrue(s.path("digest_match").asBoolean(false), "final digests differ: " + s);
        assertTrue(s.path("requests").asLong() > 0, "no request was served: " + s);
        assertEquals(3, s.path("bytes_per_version").size());
        long full = s.path("full_bytes").asLong();
        assertTrue(full > 14L << 20, "full checkpoint bytes: " + full);
        for (JsonNode b : s.path("bytes_per_version")) {
            assertTrue(b.asLong() > 0 && b.asLong() < full, "a 3% delta must be smaller than the checkpoint: " + b);
        }
        assertEquals(0, s.path("constraint_violations").asLong(-1));
    }

    @Test
    void hostModeWithStitchDelta() throws Exception {
        JsonNode s = runDemo();
        assertHealthy(s);
        assertEquals("stitch_delta", s.path("backend").asText());
        assertEquals("host", s.path("mode").asText());
    }

    @Test
    void engineModeWithSparseDelta() throws Exception {
        JsonNode s = runDemo("--mode", "engine", "--pattern", "uniform");
        assertHealthy(s);
        assertEquals("sparse_delta", s.path("backend").asText());
    }

    @Test
    void inPlaceCommitsWithDiskDelta() throws Exception {
        JsonNode s = runDemo("--commit-mode", "in_place", "--backend", "disk_delta");
        assertHealthy(s);
        assertEquals("disk_delta", s.path("backend").asText());
        assertEquals("in_place", s.path("commit_mode").asText());
    }

    @Test
    void engineInAChildProcess() throws Exception {
        JsonNode s = runDemo("--engine", "child", "--density", "0.01");
        assertHealthy(s);
    }

    @Test
    void rejectsBadArguments() {
        StringWriter err = new StringWriter();
        int code = StitchCli.commandLine().setErr(new PrintWriter(err)).execute("demo", "--mode", "engine", "--backend", "stitch_delta");
        assertTrue(code != 0);
        assertTrue(err.toString().contains("engine mode"), err.toString());
    }
}
