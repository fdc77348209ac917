package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.VersionConstraint.Verdict;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProxyErrorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode errors() throws IOException {
        return JSON.readTree(Fixtures.path("errors.json").toFile());
    }

    private static List<String> keys(JsonNode o) {
        List<String> out = new ArrayList<>();
        for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
            out.add(it.next());
        }
        return out;
    }

    /** The 409 superset body of docs/protocol/sidecar-http.md §4.7, key for key and in order (docs/conformance.md case 23). */
    @Test
    void notReadyBodyMatchesSpecExample() throws IOException {
        byte[] body = ProxyErrors.versionConflict(Verdict.NOT_READY, 2, 5, 3);
        JsonNode expected = JSON.readTree("{\"error\": {\"type\": \"WeightVersionNotReady\", \"message\": \"server is at version 2,"
                + " target 5 is not ready\", \"current_version\": 2, \"target_version\": 5, \"latest_version\": 3, \"retryable\": true},"
                + " \"type\": \"WeightVersionNotReady\", \"target_version\": 5, \"applied\": 2, \"message\": \"server is at version 2,"
                + " target 5 is not ready\"}");
        JsonNode got = JSON.readTree(body);
        assertEquals(expected, got);
        assertEquals(keys(expected), keys(got));
        assertEquals(keys(expected.get("error")), keys(got.get("error")));
        assertEquals("1", ProxyErrors.RETRY_AFTER_SECONDS);
    }

    @Test
    void tooOldBodyMatchesSpecExample() throws IOException {
        JsonNode got = JSON.readTree(ProxyErrors.versionConflict(Verdict.TOO_OLD, 2, 1, 3));
        JsonNode expected = JSON.readTree("{\"error\": {\"type\": \"WeightVersionTooOld\", \"message\": \"server is at version 2,"
                + " cannot roll back to 1\", \"current_version\": 2, \"target_version\": 1, \"latest_version\": 3, \"retryable\": false},"
                + " \"type\": \"WeightVersionTooOld\", \"target_version\": 1, \"applied\": 2, \"message\": \"server is at version 2,"
                + " cannot roll back to 1\"}");
        assertEquals(expected, got);
        assertEquals(keys(expected), keys(got));
        assertThrows(IllegalArgumentException.class, () -> ProxyErrors.versionConflict(Verdict.SATISFIED, 1, 1, 1));
    }

    /** Upstream v1 clients read the nested error object: every v1 key and value must be present. */
    @Test
    void v1ConflictBodiesAreContained() throws IOException {
        JsonNode v1 = errors().get("v1");
        long current = v1.get("current_version").asLong();
        for (String name : new String[] {"WeightVersionNotReady_exact", "WeightVersionNotReady_min", "WeightVersionTooOld"}) {
            JsonNode expectedError = v1.get(name).get("body").get("error");
            Verdict verdict = name.startsWith("WeightVersionTooOld") ? Verdict.TOO_OLD : Verdict.NOT_READY;
            long target = expectedError.get("target_version").asLong();
            JsonNode got = JSON.readTree(ProxyErrors.versionConflict(verdict, current, target, 7));
            assertEquals(409, v1.get(name).get("status").asInt());
            for (String k : keys(expectedError)) {
                assertEquals(expectedError.get(k), got.get("error").get(k), name + "." + k);
            }
            // the nested object starts with upstream's keys in upstream's order
            assertEquals(keys(expectedError), keys(got.get("error")).subList(0, keys(expectedError).size()));
        }
    }

    /** HEAD clients read the top-level keys; their message text differs (ours is v1's wording) but type/target/applied match. */
    @Test
    void headConflictKeysArePresent() throws IOException {
        JsonNode head = errors().get("head");
        for (String name : new String[] {"WeightVersionNotReady_min", "WeightVersionNotReady_exact_above"}) {
            JsonNode expected = head.get(name).get("body");
            JsonNode got = JSON.readTree(ProxyErrors.versionConflict(Verdict.NOT_READY, expected.get("applied").asLong(),
                    expected.get("target_version").asLong(), 3));
            assertEquals(keys(expected), keys(got).subList(1, 5));
            assertEquals(expected.get("type"), got.get("type"));
            assertEquals(expected.get("target_version"), got.get("target_version"));
            assertEquals(expected.get("applied"), got.get("applied"));
            assertTrue(got.get("message").isTextual());
        }
        // HEAD reports an exact pin below the served version as NotReady; we report TooOld (docs/protocol/sidecar-http.md §4.2), same top-level keys.
        JsonNode below = head.get("WeightVersionNotReady_exact_below").get("body");
        JsonNode got = JSON.readTree(ProxyErrors.versionConflict(Verdict.TOO_OLD, 3, 2, 3));
        assertEquals(keys(below), keys(got).subList(1, 5));
        assertEquals("WeightVersionTooOld", got.get("type").asText());
    }

    /** The v1 403 body byte for byte (the message names the route with a leading slash). */
    @Test
    void routeBlockedIsV1Bytes() throws IOException {
        JsonNode v1 = errors().get("v1").get("RouteBlocked");
        assertEquals(403, v1.get("status").asInt());
        assertArrayEquals(v1.get("body_raw").asText().getBytes(StandardCharsets.UTF_8),
                ProxyErrors.routeBlocked("update_weights_from_disk"));
        JsonNode head = errors().get("head").get("RouteBlocked");
        assertEquals(head.get("body").get("error").get("type"),
                JSON.readTree(ProxyErrors.routeBlocked("stage_weight_update")).get("error").get("type"));
    }

    /** The HEAD 503 body byte for byte. */
    @Test
    void engineUnavailableIsHeadBytes() throws IOException {
        JsonNode head = errors().get("head").get("EngineUnavailable");
        assertEquals(503, head.get("status").asInt());
        assertEquals(ProxyErrors.RETRY_AFTER_SECONDS, head.get("retry_after").asText());
        assertArrayEquals(head.get("body_raw").asText().getBytes(StandardCharsets.UTF_8), ProxyErrors.engineUnavailable());
    }

    @Test
    void otherBodies() throws IOException {
        assertEquals(JSON.readTree("{\"error\":{\"type\":\"InvalidWeightVersion\",\"message\":\"bad \\\"x\\\"\"}}"),
                JSON.readTree(ProxyErrors.invalidWeightVersion("bad \"x\"")));
        assertEquals(JSON.readTree("{\"error\":{\"type\":\"InvalidRequest\",\"message\":\"m\"}}"),
                JSON.readTree(ProxyErrors.invalidRequest("m")));
        assertEquals(JSON.readTree("{\"error\":{\"type\":\"RequestTooLarge\",\"message\":\"request body exceeds 67108864 bytes\"}}"),
                JSON.readTree(ProxyErrors.requestTooLarge(67108864)));
        JsonNode broken = JSON.readTree(ProxyErrors.engineBroken("connection reset"));
        assertEquals("EngineUnavailable", broken.get("error").get("type").asText());
        assertTrue(broken.get("error").get("retryable").booleanValue());
        JsonNode preempted = JSON.readTree(ProxyErrors.requestPreempted("drain timeout"));
        assertEquals("RequestPreempted", preempted.get("error").get("type").asText());
        assertTrue(preempted.get("error").get("retryable").booleanValue());
        JsonNode timeout = JSON.readTree(ProxyErrors.engineTimeout("no answer within 3600 s"));
        assertEquals("EngineTimeout", timeout.get("error").get("type").asText());
        assertEquals("no answer within 3600 s", timeout.get("error").get("message").asText());
        // non-ASCII messages stay valid JSON
        assertEquals("caf\u00e9", JSON.readTree(ProxyErrors.invalidRequest("caf\u00e9")).get("error").get("message").asText());
        assertFalse(new String(ProxyErrors.invalidRequest("a\nb"), StandardCharsets.UTF_8).contains("\n"));
    }
}
