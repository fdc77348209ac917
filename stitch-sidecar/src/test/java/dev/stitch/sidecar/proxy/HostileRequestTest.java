package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.sync.AdmissionGate;
import java.net.URI;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The two promises against hostile requests, end to end through the proxy (docs/protocol/sidecar-http.md
 * §4.1): no spelling of a control route reaches the engine, and no encoding of a body hides its
 * {@code weight_version} constraint.
 */
class HostileRequestTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PIN_999 = "{\"text\":\"hi\",\"weight_version\":{\"exact_version\":999}}";
    private static final String PIN_3 = "{\"text\":\"h\u00e9\",\"weight_version\":{\"exact_version\":3}}";

    private StubEngine engine;
    private ProxyServer proxy;
    private int port;

    @BeforeEach
    void start() throws Exception {
        engine = new StubEngine();
        AdmissionGate gate = new AdmissionGate(null, 3);
        gate.latestSeen(3);
        proxy = new ProxyServer(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withListen("127.0.0.1", 0).withIoThreads(1), gate, new RecordingEndpoints()).start();
        port = proxy.port();
    }

    @AfterEach
    void stop() {
        proxy.close();
        engine.close();
    }

    @Test
    void everySpellingOfAControlRouteIsBlocked() throws Exception {
        for (String path : List.of("/%75pdate_weights_from_disk", "/update%5Fweights_from_disk", "/%61bort_request",
                "/%61%62%6f%72%74_request", "/./update_weights_from_disk", "/x/../update_weights_from_disk",
                "//update_weights_from_disk", "/update_weights_from_disk/", "/UPDATE_WEIGHTS_FROM_DISK",
                "/%2e/pause_generation", "/a/%2e%2e/flush_cache", "http://engine/%75pdate_weights_from_disk?x=1")) {
            RawHttp.Response r = RawHttp.postJson(port, path, "{\"model_path\":\"/evil\"}");
            assertEquals(403, r.status(), path);
            assertEquals("RouteBlocked", JSON.readTree(r.body()).path("error").path("type").asText(), path);
        }
        assertTrue(engine.seen.isEmpty(), "the engine saw " + engine.seen);
    }

    @Test
    void ambiguousPathsAreRefusedNotForwarded() throws Exception {
        for (String path : List.of("/update_weights_from_disk%2F", "/a%2Fupdate_weights_from_disk", "/%2575pdate_weights_from_disk",
                "/%00generate", "/gen%0aerate", "/%zz", "/generate%", "/%5cupdate_weights_from_disk", "/../generate",
                "/%c0%afgenerate")) {
            RawHttp.Response r = RawHttp.postJson(port, path, "{\"text\":\"hi\"}");
            assertEquals(400, r.status(), path);
            assertEquals("InvalidRequest", JSON.readTree(r.body()).path("error").path("type").asText(), path);
        }
        assertTrue(engine.seen.isEmpty(), "the engine saw " + engine.seen);
    }

    @Test
    void theEngineIsSentThePathThatWasChecked() throws Exception {
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"ok\":1}"));
        RawHttp.postJson(port, "/./v1/../%67enerate?stream=0", "{\"text\":\"hi\"}");
        assertEquals("/generate?stream=0", engine.seen.getLast().uri());
        RawHttp.postJson(port, "/tok%65nize/x%20y", "{\"text\":\"hi\"}");
        assertEquals("/tokenize/x%20y", engine.seen.getLast().uri());
    }

    @Test
    void encodedBodiesKeepTheirConstraint() throws Exception {
        for (Encoded e : encodings(PIN_999)) {
            RawHttp.Response r = RawHttp.exchangeBytes(port, "POST", "/generate", e.bytes, e.headers());
            assertEquals(409, r.status(), e.name);
        }
        assertTrue(engine.seen.isEmpty(), "no pinned-to-999 body was forwarded: " + engine.seen);
    }

    @Test
    void encodedBodiesAreForwardedAsUtf8WithTheConstraintApplied() throws Exception {
        for (Encoded e : encodings(PIN_3)) {
            RawHttp.Response r = RawHttp.exchangeBytes(port, "POST", "/generate", e.bytes, e.headers());
            assertEquals(200, r.status(), e.name);
            StubEngine.Seen seen = engine.seen.getLast();
            JsonNode fwd = JSON.readTree(seen.body());
            assertEquals("h\u00e9", fwd.path("text").asText(), e.name);
            assertFalse(fwd.has("weight_version"), e.name);
            assertEquals("wv3;", fwd.path("extra_key").asText(), e.name);
            assertTrue(fwd.hasNonNull("rid"), e.name);
            assertEquals('{', seen.body()[0], e.name + ": forwarded as UTF-8 without a byte-order mark");
        }
    }

    @Test
    void unparseableOrUndecodableBodiesOnVersionedRoutesAre400() throws Exception {
        List<byte[]> bodies = List.of(
                "{\"text\":\"hi\",\"weight_version\":{\"exact_version\":999}} trailing".getBytes(StandardCharsets.UTF_8),
                "not json {\"weight_version\":{\"exact_version\":999}}".getBytes(StandardCharsets.UTF_8),
                new byte[] {(byte) 0xFE, (byte) 0xFF, 0x00, '{', (byte) 0xD8},
                new byte[] {'{', 0, '}'},
                PIN_999.getBytes(StandardCharsets.UTF_16LE));
        List<String> types = List.of("application/json", "text/plain", "application/json; charset=utf-16",
                "application/json", "application/json; charset=utf-8");
        for (int i = 0; i < bodies.size(); i++) {
            RawHttp.Response r = RawHttp.exchangeBytes(port, "POST", "/generate", bodies.get(i), "Content-Type: " + types.get(i));
            assertEquals(400, r.status(), "body " + i);
            assertEquals("InvalidRequest", JSON.readTree(r.body()).path("error").path("type").asText(), "body " + i);
        }
        RawHttp.Response latin1 = RawHttp.exchangeBytes(port, "POST", "/generate", PIN_999.getBytes(StandardCharsets.US_ASCII),
                "Content-Type: application/json; charset=iso-8859-1");
        assertEquals(400, latin1.status(), "a non-Unicode charset is refused, not guessed");
        assertTrue(engine.seen.isEmpty(), "the engine saw " + engine.seen);
    }

    private record Encoded(String name, byte[] bytes, String contentType) {
        Encoded(String name, byte[] bytes) {
            this(name, bytes, null);
        }

        String[] headers() {
            return contentType == null ? new String[0] : new String[] {contentType};
        }
    }

    private static List<Encoded> encodings(String json) {
        byte[] bom8 = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
        Charset u32le = Charset.forName("UTF-32LE");
        Charset u32be = Charset.forName("UTF-32BE");
        return List.of(
                new Encoded("UTF-8 BOM", concat(bom8, json.getBytes(StandardCharsets.UTF_8)), "Content-Type: application/json"),
                new Encoded("UTF-8 BOM, text/plain", concat(bom8, json.getBytes(StandardCharsets.UTF_8)), "Content-Type: text/plain"),
                new Encoded("UTF-16LE BOM", concat(new byte[] {(byte) 0xFF, (byte) 0xFE}, json.getBytes(StandardCharsets.UTF_16LE)),
                        "Content-Type: application/json"),
                new Encoded("UTF-16BE BOM", json.getBytes(StandardCharsets.UTF_16), "Content-Type: application/json"),
                new Encoded("UTF-16LE", json.getBytes(StandardCharsets.UTF_16LE), "Content-Type: application/json"),
                new Encoded("UTF-16BE", json.getBytes(StandardCharsets.UTF_16BE), "Content-Type: application/json"),
                new Encoded("UTF-16 declared", json.getBytes(StandardCharsets.UTF_16), "Content-Type: application/json; charset=utf-16"),
                new Encoded("UTF-16LE declared", json.getBytes(StandardCharsets.UTF_16LE), "Content-Type: application/json; charset=\"UTF-16LE\""),
                new Encoded("UTF-32LE BOM", concat(new byte[] {(byte) 0xFF, (byte) 0xFE, 0, 0}, json.getBytes(u32le)),
                        "Content-Type: application/json"),
                new Encoded("UTF-32BE", json.getBytes(u32be), "Content-Type: application/json"),
                new Encoded("no Content-Type", json.getBytes(StandardCharsets.UTF_16LE)));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
