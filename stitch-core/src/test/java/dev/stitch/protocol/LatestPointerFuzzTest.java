package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes {@link LatestPointer#parse}: hostile {@code latest.json} bytes give a {@link ProtocolException}
 * and nothing else, and whatever parses survives the canonical round trip (docs/protocol/board.md §1.1).
 */
class LatestPointerFuzzTest {

    @FuzzTest
    void latestPointer(byte[] input) {
        LatestPointer parsed;
        try {
            parsed = LatestPointer.parse(input, "fuzzed latest.json");
        } catch (ProtocolException expected) {
            return;
        }
        byte[] canonical = parsed.toBytes();
        LatestPointer reparsed = ProtocolFuzzing.reparse(() -> LatestPointer.parse(canonical, "canonical latest.json"));
        assertEquals(parsed, reparsed, "parse(serialise(parse(x))) differs from parse(x)");
        assertArrayEquals(canonical, reparsed.toBytes(), "canonical bytes are not a fixed point");
    }
}
