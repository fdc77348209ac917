package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes {@link Manifest#parse}: hostile bytes give a {@link ProtocolException} and nothing else, and
 * whatever parses survives the canonical round trip (docs/protocol/board.md §1.5).
 */
class ManifestFuzzTest {

    @FuzzTest
    void manifest(byte[] input) {
        Manifest parsed;
        try {
            parsed = Manifest.parse(input, "fuzzed manifest");
        } catch (ProtocolException expected) {
            return;
        }
        byte[] canonical = parsed.toBytes();
        Manifest reparsed = ProtocolFuzzing.reparse(() -> Manifest.parse(canonical, "canonical manifest"));
        assertEquals(parsed, reparsed, "parse(serialise(parse(x))) differs from parse(x)");
        assertArrayEquals(canonical, reparsed.toBytes(), "canonical bytes are not a fixed point");
    }
}
