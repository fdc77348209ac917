package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Fuzzes {@link VersionConstraint#parse} on request bodies (docs/protocol/sidecar-http.md §4.2): it answers
 * Valid or Invalid and never throws, an Invalid carries a message, and a Valid constraint written
 * back as JSON parses to itself.
 */
class VersionConstraintFuzzTest {

    @FuzzTest
    void versionConstraint(byte[] input) {
        JsonNode body;
        try {
            body = ProtocolJson.parse(input, "fuzzed request body");
        } catch (ProtocolException notJson) {
            return;
        }
        // The proxy passes the value of weight_version; a body that is no object is passed whole, to reach the other types.
        check(body.isObject() ? body.get("weight_version") : body);
    }

    private static void check(JsonNode value) {
        VersionConstraint.ParseResult result = VersionConstraint.parse(value);
        switch (result) {
            case VersionConstraint.Invalid invalid -> assertFalse(invalid.message().isBlank(), "an Invalid without a message");
            case VersionConstraint.Valid valid -> {
                VersionConstraint c = valid.constraint();
                c.exact().ifPresent(v -> assertTrue(v >= 0, "negative exact version " + v));
                c.min().ifPresent(v -> assertTrue(v >= 0, "negative minimum version " + v));
                ObjectNode written = JsonNodeFactory.instance.objectNode();
                c.exact().ifPresent(v -> written.put(VersionConstraint.EXACT_VERSION, v));
                c.min().ifPresent(v -> written.put(VersionConstraint.MIN_VERSION, v));
                VersionConstraint.ParseResult again = VersionConstraint.parse(written);
                assertEquals(new VersionConstraint.Valid(c), again, "a valid constraint written back parses differently");
                if (c.isNone()) {
                    assertEquals(VersionConstraint.Verdict.SATISFIED, c.evaluate(0), "no constraint must admit every version");
                }
            }
        }
    }
}
