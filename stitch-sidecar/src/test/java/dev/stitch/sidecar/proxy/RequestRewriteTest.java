package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Request decisions and the forwarded-body rewrite of docs/protocol/sidecar-http.md §4.1–4.3, without a socket. */
class RequestRewriteTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TYPE = "application/json";
    private static final Pattern FRESH_RID = Pattern.compile("\"rid\":\"([0-9a-f]{32})\"");
    private final RouteTable table = new RouteTable(ProxyServer.DEFAULT_VERSIONED_ROUTES);

    private RequestRewrite.Decision decide(String target, String contentType, byte[] body) {
        return RequestRewrite.decide(table.classify(target), contentType, body);
    }

    private RequestRewrite.Decision decide(String target, String body) {
        return decide(target, TYPE, bytes(body));
    }

    private VersionedRequest admitted(String body) {
        return assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", body)).request();
    }

    private RequestRewrite.Answer answered(String target, String body) {
        return assertInstanceOf(RequestRewrite.Answer.class, decide(target, body));
    }

    private static String forwarded(VersionedRequest r, long start, String run) {
        return new String(r.forwardedBody(start, run), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String errorType(RequestRewrite.Answer a) throws Exception {
        JsonNode body = JSON.readTree(a.body());
        assertEquals(a.rejectionType(), body.path("error").path("type").asText());
        return a.rejectionType();
    }

    // ---- routes ----

    @Test
    void blockedRoutesAreAnswered403WithoutLookingAtTheBody() throws Exception {
        RequestRewrite.Answer a = answered("/flush_cache/", "{not json");
        assertEquals(403, a.status());
        assertEquals("RouteBlocked", errorType(a));
        assertArrayEquals(ProxyErrors.routeBlocked("flush_cache"), a.body());
    }

    @Test
    void sidecarRoutesBypassWithoutLookingAtTheBody() {
        RequestRewrite.Decision d = decide("/rpc_sync_from_bulletin_board", "{not json");
        assertEquals(new RequestRewrite.Endpoint("rpc_sync_from_bulletin_board"), d);
        assertEquals(new RequestRewrite.Endpoint("health"), decide("/health?x=1", TYPE, new byte[0]));
    }

    @Test
    void malformedJsonIs400OnVersionedAndPassThroughRoutes() throws Exception {
        for (String target : new String[] {"/generate", "/v1/models"}) {
            for (String body : new String[] {"{\"a\":", "{\"a\":1} trailing", "[1,2", "nope", "{\"a\":1,}"}) {
                RequestRewrite.Answer a = answered(target, body);
                assertEquals(400, a.status(), body);
                assertEquals("InvalidRequest", errorType(a));
                String message = JSON.readTree(a.body()).path("error").path("message").asText();
                assertTrue(message.startsWith("malformed JSON body: "), message);
                assertTrue(!message.contains("\n"), "one line: " + message);
            }
        }
    }

    @Test
    void versionedBodiesAreParsedAsJsonWhateverTheirContentType() {
        byte[] garbage = bytes("{\"weight_version\": nope");
        byte[] pinned = bytes("{\"weight_version\":{\"exact_version\":7}}");
        for (String type : new String[] {null, "text/plain", "application/jsonx", "application/x-json"}) {
            RequestRewrite.Answer a = assertInstanceOf(RequestRewrite.Answer.class, decide("/generate", type, garbage));
            assertEquals(400, a.status(), String.valueOf(type));
            VersionedRequest r = assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", type, pinned)).request();
            assertEquals(java.util.OptionalLong.of(7), r.constraint().exact(), String.valueOf(type));
        }
        byte[] empty = new byte[0];
        VersionedRequest r = assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", TYPE, empty)).request();
        assertSame(empty, r.forwardedBody(3, null));
        for (String type : new String[] {"Application/JSON; charset=UTF-8", " application/json ;q=1", "APPLICATION/JSON"}) {
            assertInstanceOf(RequestRewrite.Answer.class, decide("/generate", type, garbage), type);
        }
    }

    // ---- pass-through routes ----

    @Test
    void passThroughRoutesOnlyLoseTheConstraintUnvalidated() {
        RequestRewrite.Forward f = assertInstanceOf(RequestRewrite.Forward.class,
                decide("/v1/models", "{\"a\": 1e-05, \"weight_version\": \"garbage\", \"extra_key\": 7}"));
        assertEquals("{\"a\": 1e-05, \"extra_key\": 7}", new String(f.body(), StandardCharsets.UTF_8));
        byte[] untouched = bytes("{\"rid\":null,\"x\":-0.0}");
        assertSame(untouched, assertInstanceOf(RequestRewrite.Forward.class,
                decide("/v1/models", TYPE, untouched)).body());
        byte[] array = bytes("[{\"weight_version\":1}]");
        assertSame(array, assertInstanceOf(RequestRewrite.Forward.class, decide("/other", TYPE, array)).body());
        byte[] text = bytes("weight_version=1");
        assertSame(text, assertInstanceOf(RequestRewrite.Forward.class, decide("/other", "text/plain", text)).body());
    }

    // ---- the weight_version constraint ----

    @Test
    void validConstraints() {
        assertEquals(VersionConstraint.NONE, admitted("{\"text\":\"hi\"}").constraint());
        assertEquals(VersionConstraint.NONE, admitted("{\"weight_version\":null}").constraint());
        assertEquals(VersionConstraint.NONE, admitted("{\"weight_version\":{}}").constraint());
        assertEquals(VersionConstraint.exactly(5), admitted("{\"weight_version\":{\"exact_version\":5}}").constraint());
        assertEquals(VersionConstraint.exactly(5), admitted("{\"weight_version\":{\"exact_version\":\" 5 \"}}").constraint());
        assertEquals(VersionConstraint.atLeast(4), admitted("{\"weight_version\":{\"min_required_version\":4}}").constraint());
        assertEquals(VersionConstraint.atLeast(4), admitted("{\"weight_version\":{\"min_version\":\"4\"}}").constraint());
        assertEquals(VersionConstraint.atLeast(4),
                admitted("{\"weight_version\":{\"min_version\":4,\"min_required_version\":4}}").constraint());
        assertEquals(VersionConstraint.atLeast(4),
                admitted("{\"weight_version\":{\"min_version\":null,\"min_required_version\":4}}").constraint());
        VersionConstraint both = admitted("{\"weight_version\":{\"exact_version\":2,\"min_version\":9}}").constraint();
        assertTrue(both.isExact(), "exact wins");
        assertEquals(2, both.target());
        assertEquals(VersionConstraint.exactly(Long.MAX_VALUE),
                admitted("{\"weight_version\":{\"exact_version\":9223372036854775807}}").constraint());
        assertEquals(VersionConstraint.exactly(7),
                admitted("{\"weight_version\":{\"exact_version\":1},\"weight_version\":{\"exact_version\":7}}").constraint(),
                "the last duplicate counts");
    }

    @Test
    void malformedConstraintsAre400InvalidWeightVersion() throws Exception {
        String[] bad = {
            "7", "\"3\"", "true", "[1]",
            "{\"exact_version\":-1}", "{\"exact_version\":1.5}", "{\"exact_version\":1e3}",
            "{\"exact_version\":\"abc\"}", "{\"exact_version\":\"-2\"}", "{\"exact_version\":\"\"}",
            "{\"exact_version\":true}", "{\"exact_version\":{}}", "{\"exact_version\":9223372036854775808}",
            "{\"min_version\":1,\"min_required_version\":2}", "{\"min_version\":1,\"max_version\":2}",
            "{\"exact\":1}",
        };
        for (String value : bad) {
            String body = "{\"text\":\"hi\",\"weight_version\":" + value + "}";
            RequestRewrite.Answer a = answered("/v1/completions", body);
            assertEquals(400, a.status(), value);
            assertEquals("InvalidWeightVersion", errorType(a), value);
        }
    }

    // ---- rid ----

    @Test
    void freshRidIsAppendedWhenAbsentAndReplacesNull() {
        VersionedRequest r = admitted("{\"text\":\"hi\"}");
        String out = forwarded(r, 3, null);
        Matcher m = FRESH_RID.matcher(out);
        assertTrue(m.find(), out);
        assertEquals(List.of(m.group(1)), r.rids());
        assertEquals("{\"text\":\"hi\",\"rid\":\"" + m.group(1) + "\",\"extra_key\":\"wv3;\"}", out);

        r = admitted("{\"rid\" : null , \"text\":\"hi\"}");
        out = forwarded(r, 0, null);
        assertEquals("{\"rid\" : \"" + r.rids().getFirst() + "\" , \"text\":\"hi\",\"extra_key\":\"wv0;\"}", out);
    }

    @Test
    void existingRidsAreKept() {
        VersionedRequest r = admitted("{\"rid\":\"abc\"}");
        assertEquals(List.of("abc"), r.rids());
        assertEquals("{\"rid\":\"abc\",\"extra_key\":\"wv1;\"}", forwarded(r, 1, null));
        r = admitted("{\"rid\":[\"a\",null,\"b\"],\"text\":[\"x\",\"y\",\"z\"]}");
        assertEquals(List.of("a", "b"), r.rids());
        assertEquals("{\"rid\":[\"a\",null,\"b\"],\"text\":[\"x\",\"y\",\"z\"],\"extra_key\":\"wv1;\"}", forwarded(r, 1, null));
        assertEquals(List.of("12"), admitted("{\"rid\":12}").rids());
        assertEquals(List.of("a\"b"), admitted("{\"rid\":\"a\\\"b\"}").rids());
    }

    // ---- extra_key ----

    @Test
    void extraKeyIsComposedAfterAdmission() {
        assertEquals("{\"extra_key\":\"wv3;user-key\",\"rid\":\"r\"}",
                forwarded(admitted("{\"extra_key\":\"user-key\",\"rid\":\"r\"}"), 3, null));
        assertEquals("{\"rid\":\"r\",\"extra_key\":\"wv1;run-a/k\"}",
                forwarded(admitted("{\"rid\":\"r\",\"extra_key\":\"k\"}"), 1, "run-a"));
        assertEquals("{\"rid\":\"r\",\"extra_key\":\"wv2;run-a/\"}",
                forwarded(admitted("{\"rid\":\"r\",\"extra_key\":null}"), 2, "run-a"));
        assertEquals("{\"rid\":[\"a\",\"b\"],\"extra_key\":[\"wv3;k1\",\"wv3;\"]}",
                forwarded(admitted("{\"rid\":[\"a\",\"b\"],\"extra_key\":[\"k1\",null]}"), 3, null));
    }

    @Test
    void extraKeyOfAnotherTypeIs400InvalidRequest() throws Exception {
        for (String value : new String[] {"7", "true", "{}", "[\"a\",1]", "[[\"a\"]]"}) {
            RequestRewrite.Answer a = answered("/generate", "{\"extra_key\":" + value + "}");
            assertEquals(400, a.status(), value);
            assertEquals("InvalidRequest", errorType(a), value);
        }
    }

    @Test
    void specExampleAndUntouchedBytesSurvive() {
        VersionedRequest r = admitted("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":2},\"extra_key\":\"k\"}");
        String out = forwarded(r, 2, null);
        assertEquals("{\"text\":\"hi\",\"extra_key\":\"wv2;k\",\"rid\":\"" + r.rids().getFirst() + "\"}", out);
        assertSame(r.forwardedBody(2, null), r.forwardedBody(2, null), "composed once");

        String kept = "{ \"x\" : -0.0 , \"y\":1E+2, \"s\":\"\\u00e9\\n\\/\", \"weight_version\" : { \"min_version\" : \"1\" } ,"
                + "\"rid\":\"r\" }";
        assertEquals("{ \"x\" : -0.0 , \"y\":1E+2, \"s\":\"\\u00e9\\n\\/\", \"rid\":\"r\" ,\"extra_key\":\"wv4;\"}",
                forwarded(admitted(kept), 4, null));
    }

    @Test
    void arrayAndScalarBodiesAreAdmittedUnconstrainedAndForwardedByteForByte() {
        byte[] batch = bytes("[{\"text\":\"a\",\"weight_version\":{\"exact_version\":9}},{\"text\":\"b\"}]");
        VersionedRequest r = assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", TYPE, batch)).request();
        assertEquals(VersionConstraint.NONE, r.constraint());
        assertEquals(List.of(), r.rids());
        assertSame(batch, r.forwardedBody(5, "run"));
        byte[] scalar = bytes(" \"just text\" ");
        assertSame(scalar, assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", TYPE, scalar))
                .request().forwardedBody(5, null));
    }

    @Test
    void largeGeneratedPromptIsRewrittenAroundItsBytes() {
        Random rnd = new Random(42);
        StringBuilder prompt = new StringBuilder();
        String[] pieces = {"\\n", "\\\"", "\\u00e9", "é", "日本", "\\\\", " ", "a", "0", "\\t", "🙂"};
        while (prompt.length() < 2_000_000) {
            prompt.append(pieces[rnd.nextInt(pieces.length)]);
        }
        StringBuilder numbers = new StringBuilder("[");
        for (int i = 0; i < 10_000; i++) {
            numbers.append(i == 0 ? "" : ",").append(rnd.nextInt(2) == 0 ? "-0.000" + i : i + "e-0" + (i % 9));
        }
        numbers.append(']');
        String head = "{\"text\":\"" + prompt + "\",\"sampling_params\":{\"temperature\":1.0E0,\"stop\":" + numbers + "}";
        VersionedRequest r = admitted(head + ",\"weight_version\":{\"min_required_version\":7},\"rid\":\"big\"}");
        assertEquals(VersionConstraint.atLeast(7), r.constraint());
        assertEquals(head + ",\"rid\":\"big\",\"extra_key\":\"wv8;run/\"}", forwarded(r, 8, "run"));
    }

    @Test
    void aPromptLongerThanJacksonsDefaultStringLimitKeepsItsConstraint() {
        StringBuilder json = new StringBuilder(21_000_100).append("{\"text\":\"");
        json.repeat('x', 21_000_000).append("\",\"weight_version\":{\"exact_version\":3}}");
        RequestRewrite.Admit a = assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", TYPE, bytes(json.toString())));
        assertEquals(java.util.OptionalLong.of(3), a.request().constraint().exact());
    }

    @Test
    void nestingBeyondTheLimitIs400NotAStackOverflow() {
        int depth = 100_000;
        String deep = "{\"text\":" + "[".repeat(depth) + "]".repeat(depth) + "}";
        RequestRewrite.Answer a = assertInstanceOf(RequestRewrite.Answer.class, decide("/generate", TYPE, bytes(deep)));
        assertEquals(400, a.status());
        String ok = "{\"text\":" + "[".repeat(500) + "]".repeat(500) + ",\"weight_version\":{\"exact_version\":3}}";
        assertInstanceOf(RequestRewrite.Admit.class, decide("/generate", TYPE, bytes(ok)));
    }
}
