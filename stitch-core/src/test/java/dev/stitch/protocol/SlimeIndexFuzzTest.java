package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.OptionalLong;

/**
 * Fuzzes {@link SlimeIndex#toManifest}, the lift of a foreign {@code model.safetensors.index.json}
 * (docs/protocol/board.md §3): only {@link ProtocolException} escapes, and the lifted manifest survives
 * the canonical round trip of 1.5.
 */
class SlimeIndexFuzzTest {

    private static final List<String> SHARDS = List.of("model-00000-of-00001.safetensors");

    @FuzzTest
    void slimeIndex(byte[] input) {
        Manifest lifted;
        try {
            JsonNode index = ProtocolJson.parse(input, "fuzzed index");
            lifted = SlimeIndex.toManifest(index, "run-a", directoryVersion(index), SHARDS);
        } catch (ProtocolException expected) {
            return;
        }
        byte[] canonical = lifted.toBytes();
        Manifest reparsed = ProtocolFuzzing.reparse(() -> Manifest.parse(canonical, "canonical manifest"));
        assertEquals(lifted, reparsed, "a lifted manifest does not survive its canonical bytes");
        assertArrayEquals(canonical, reparsed.toBytes(), "canonical bytes are not a fixed point");
    }

    /** The version the index claims when it is readable, so the fuzzer gets past the directory check. */
    private static long directoryVersion(JsonNode index) {
        JsonNode claimed = index.path("metadata").path("version");
        OptionalLong v = claimed.isMissingNode() ? OptionalLong.empty() : VersionConstraint.versionValue(claimed);
        return v.orElse(1);
    }
}
