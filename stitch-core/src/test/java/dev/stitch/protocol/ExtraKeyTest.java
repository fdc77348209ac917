package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class ExtraKeyTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode compose(String userJson, long version, String run) throws IOException {
        ExtraKey.UserKeyResult r = ExtraKey.user(userJson == null ? null : JSON.readTree(userJson));
        return assertInstanceOf(ExtraKey.UserKey.class, r).compose(version, run);
    }

    /** docs/conformance.md case 26. */
    @Test
    void composition() throws IOException {
        assertEquals("wv0;", compose(null, 0, null).textValue());
        assertEquals("wv0;", compose("null", 0, null).textValue());
        assertEquals("wv3;user-key", compose("\"user-key\"", 3, null).textValue());
        assertEquals(JSON.readTree("[\"wv3;k1\",\"wv3;k2\"]"), compose("[\"k1\",\"k2\"]", 3, null));
        assertEquals(JSON.readTree("[\"wv3;run-a/k1\",\"wv3;run-a/\"]"), compose("[\"k1\",null]", 3, "run-a"));
        assertEquals(JSON.readTree("[]"), compose("[]", 3, null));
        assertEquals("wv1;run-a/k", compose("\"k\"", 1, "run-a").textValue());
        assertEquals("wv2;run-a/", compose(null, 2, "run-a").textValue());
        assertEquals("wv3;", compose("\"\"", 3, null).textValue());
    }

    @Test
    void badTypesAre400() throws IOException {
        for (String bad : new String[] {"5", "true", "{\"a\":1}", "[1]", "[\"a\",[\"b\"]]", "1.5"}) {
            ExtraKey.Invalid inv = assertInstanceOf(ExtraKey.Invalid.class, ExtraKey.user(JSON.readTree(bad)), bad);
            assertTrue(inv.message().contains("extra_key"), inv.message());
        }
    }

    /** The parse rule of 4.3: the number between "wv" and the first ';', never from the right. */
    @Test
    void parseRule() {
        assertEquals(OptionalLong.of(12), ExtraKey.parseVersion("wv12;abc"));
        assertEquals(OptionalLong.of(0), ExtraKey.parseVersion("wv0;"));
        assertEquals(OptionalLong.of(3), ExtraKey.parseVersion("wv3;run-a/k;wv9;"));
        assertEquals(OptionalLong.of(7), ExtraKey.parseVersion("wv7;keylora-42"));
        for (String not : new String[] {"wv;x", "w12;", "wv12", "wvx;", "", "WV1;", "xwv1;", "wv1x;"}) {
            assertTrue(ExtraKey.parseVersion(not).isEmpty(), not);
        }
        assertTrue(ExtraKey.parseVersion(null).isEmpty());
    }

    /** The extra_key cases of requests.jsonl (v1 and HEAD agree on every one). */
    @Test
    void requestsFixture() throws IOException {
        int n = 0;
        for (String line : Files.readAllLines(Fixtures.path("requests.jsonl"))) {
            JsonNode c = JSON.readTree(line);
            if (!c.path("kind").asText().equals("extra_key")) {
                continue;
            }
            String user = c.path("user_key").isNull() ? null : c.path("user_key").asText();
            String run = c.path("run_id").isNull() ? null : c.path("run_id").asText();
            long v = c.path("version").asLong();
            String key = ExtraKey.compose(v, run, user);
            assertEquals(c.path("v1").asText(), key, line);
            assertEquals(c.path("head").asText(), key, line);
            assertEquals(OptionalLong.of(v), ExtraKey.parseVersion(key));
            n++;
        }
        assertEquals(6, n);
    }

    /** The forwarded extra_key of every admitted request in requests.jsonl, for both v1 (no run) and HEAD (run-a). */
    @Test
    void forwardedKeysOfFixtureRequests() throws IOException {
        int n = 0;
        for (String line : Files.readAllLines(Fixtures.path("requests.jsonl"))) {
            JsonNode c = JSON.readTree(line);
            if (!c.path("kind").asText().equals("policy")) {
                continue;
            }
            JsonNode body;
            try {
                body = JSON.readTree(c.path("body").asText());
            } catch (IOException e) {
                continue;
            }
            JsonNode v1Forwarded = c.path("v1_sidecar").path("forwarded").path("json");
            JsonNode headForwarded = c.path("head_sidecar").path("forwarded").path("json");
            if (!body.isObject() || !v1Forwarded.has("extra_key") || !headForwarded.has("extra_key")) {
                continue;
            }
            ExtraKey.UserKey user = assertInstanceOf(ExtraKey.UserKey.class, ExtraKey.user(body.get("extra_key")));
            assertEquals(v1Forwarded.get("extra_key"), user.compose(3, null), c.path("id").asText());
            assertEquals(headForwarded.get("extra_key"), user.compose(3, "run-a"), c.path("id").asText());
            n++;
        }
        assertTrue(n >= 10, "cases: " + n);
    }
}
