package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * Fuzzes {@link CanonicalJson} on every document {@link ProtocolJson#parse} accepts
 * (docs/protocol/board.md §1.5): the output is ASCII, reads back as the same tree, and is a fixed point.
 */
class CanonicalJsonFuzzTest {

    @FuzzTest
    void canonicalJson(byte[] input) {
        JsonNode tree;
        try {
            tree = ProtocolJson.parse(input, "fuzzed document");
        } catch (ProtocolException expected) {
            return;
        }
        byte[] canonical = CanonicalJson.toBytes(tree);
        for (byte b : canonical) {
            assertTrue(b >= 0, "canonical JSON must be ASCII");
        }
        assertEquals('\n', canonical[canonical.length - 1], "canonical JSON ends with a newline");
        JsonNode reparsed = ProtocolFuzzing.reparse(() -> ProtocolJson.parse(canonical, "canonical document"));
        assertEquals(tree, reparsed, "the canonical form reads back as a different tree");
        assertArrayEquals(canonical, CanonicalJson.toBytes(reparsed), "canonical bytes are not a fixed point");
    }
}
