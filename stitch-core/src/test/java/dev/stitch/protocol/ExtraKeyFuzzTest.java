package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

/**
 * Fuzzes the {@code extra_key} reader and composer (docs/protocol/sidecar-http.md §4.3): {@link ExtraKey#user}
 * never throws, every composed key carries back the version it was composed with, and
 * {@link ExtraKey#parseVersion} accepts any string.
 */
class ExtraKeyFuzzTest {

    /** Versions the composer is checked with: both ends of the range and one in between. */
    private static final long[] VERSIONS = {0, 7, Long.MAX_VALUE};

    @FuzzTest
    void extraKey(byte[] input) {
        String raw = new String(input, StandardCharsets.UTF_8);
        OptionalLong fromRaw = ExtraKey.parseVersion(raw);
        fromRaw.ifPresent(v -> assertFalse(v < 0, "negative version parsed from a raw key"));
        JsonNode body;
        try {
            body = ProtocolJson.parse(input, "fuzzed request body");
        } catch (ProtocolException notJson) {
            return;
        }
        // As the proxy passes the value of extra_key; a body that is no object is passed whole, to reach the other types.
        JsonNode value = body.isObject() ? body.get("extra_key") : body;
        String runId = body.isObject() && body.path("run").isTextual() ? body.get("run").textValue() : null;
        switch (ExtraKey.user(value)) {
            case ExtraKey.Invalid invalid -> assertFalse(invalid.message().isBlank(), "an Invalid without a message");
            case ExtraKey.UserKey user -> {
                for (long version : VERSIONS) {
                    JsonNode composed = user.compose(version, runId);
                    if (user.list()) {
                        assertEquals(user.keys().size(), composed.size(), "a list key composes element-wise");
                        composed.forEach(k -> assertEquals(OptionalLong.of(version), ExtraKey.parseVersion(k.textValue())));
                    } else {
                        assertEquals(OptionalLong.of(version), ExtraKey.parseVersion(composed.textValue()));
                    }
                }
            }
        }
    }
}
