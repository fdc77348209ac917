package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

class LatestPointerTest {

    private static LatestPointer parse(String s) throws ProtocolException {
        return LatestPointer.parse(s.getBytes(StandardCharsets.UTF_8), "latest.json");
    }

    /** docs/conformance.md case 1: the golden pointers. */
    @Test
    void goldensRoundTrip() throws IOException {
        String golden = "{\"protocol_version\": 1, \"updated_at\": 1795267281.7295346, \"version\": 3}\n";
        LatestPointer p = parse(golden);
        assertNull(p.runId());
        assertEquals(3, p.version());
        assertEquals(1795267281.7295346, p.updatedAt());
        assertEquals(golden, new String(p.toBytes(), StandardCharsets.UTF_8));
        String ours = "{\"manifest_checksum\": \"xxh3-128:49bfa924f4333b926970603840f0e0a3\", \"protocol_version\": 1,"
                + " \"run_id\": \"run-a\", \"updated_at\": 1700000003.5, \"version\": 3}\n";
        LatestPointer q = parse(ours);
        assertEquals("run-a", q.runId());
        assertEquals("xxh3-128:49bfa924f4333b926970603840f0e0a3", q.manifestChecksum());
        assertEquals(ours, new String(q.toBytes(), StandardCharsets.UTF_8));
        byte[] fixture = Files.readAllBytes(Fixtures.path("board-v1/latest.json"));
        LatestPointer f = LatestPointer.parse(fixture, "board-v1/latest.json");
        assertEquals(3, f.version());
        assertEquals(1700000003.25, f.updatedAt());
        assertArrayEquals(fixture, f.toBytes());
    }

    /** docs/conformance.md case 2, 3 and 6 (model level). */
    @Test
    void readRules() throws IOException {
        assertEquals(0, parse("{}").version());
        assertNull(parse("{\"version\": 2}").runId());
        assertNull(parse("{\"version\": 2, \"run_id\": null}").runId());
        assertEquals(7, parse("{\"version\": \"7\"}").version());
        assertEquals(7, parse("{\"version\": 7, \"unknown\": [1]}").version());
        for (String bad : List.of("{\"protocol_version\": 2, \"version\": 1}", "{\"version\": -1}", "{\"version\": \"x7\"}",
                "{\"version\": 1.5}", "not json", "", "[]", "\"3\"", "{\"version\": 1} trailing", "{\"run_id\": 5}",
                "{\"run_id\": \"\"}", "{\"updated_at\": \"yesterday\"}", "{\"manifest_checksum\": 1}")) {
            assertThrows(ProtocolException.class, () -> parse(bad), bad);
        }
    }
}
