package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.sync.AdmissionGate;
import java.net.URI;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The control token and the refresh rate limit of the state-changing sidecar routes (security.md). */
class ControlAccessTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private StubEngine engine;
    private RecordingEndpoints endpoints;
    private ProxyServer proxy;

    @BeforeEach
    void startEngine() throws Exception {
        engine = new StubEngine();
        endpoints = new RecordingEndpoints();
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        engine.close();
    }

    private int start(ControlPolicy policy) {
        AdmissionGate gate = new AdmissionGate(null, 3);
        proxy = new ProxyServer(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withListen("127.0.0.1", 0).withIoThreads(1).withControl(policy), gate, endpoints).start();
        return proxy.port();
    }

    private static JsonNode error(RawHttp.Response r) throws Exception {
        return JSON.readTree(r.body()).path("error");
    }

    @Test
    void stateChangingRoutesNeedTheTokenAndReadOnlyRoutesDoNot() throws Exception {
        int port = start(new ControlPolicy("s3cret", 0, 1));
        for (String route : List.of("/wake", "/rpc_sync_from_bulletin_board")) {
            for (String[] auth : List.of(new String[0], new String[] {"Authorization: Bearer wrong"},
                    new String[] {"Authorization: Bearer s3cret-and-more"}, new String[] {"Authorization: s3cret"},
                    new String[] {"Authorization: Basic czNjcmV0"})) {
                RawHttp.Response r = RawHttp.postJson(port, route, "{}", auth);
                assertEquals(401, r.status(), route + " " + List.of(auth));
                assertEquals("Unauthorized", error(r).path("type").asText());
                assertTrue(error(r).path("message").asText().contains("Bearer"));
                assertEquals("Bearer", r.header("www-authenticate"));
            }
        }
        assertTrue(endpoints.called.isEmpty(), "no refused call reached the control plane: " + endpoints.called);
        assertEquals(10, proxy.stats().rejections("Unauthorized"));

        assertEquals(200, RawHttp.postJson(port, "/wake", "", "Authorization: Bearer s3cret").status());
        assertEquals(200, RawHttp.postJson(port, "/rpc_sync_from_bulletin_board", "{}",
                "Authorization: bearer  s3cret").status());
        assertEquals(List.of("wake", "rpc_sync_from_bulletin_board:{}"), endpoints.called);
        for (String route : List.of("/health", "/metrics", "/server_info", "/get_weight_version")) {
            assertEquals(200, RawHttp.exchange(port, "GET", route, null).status(), route);
        }
    }

    @Test
    void withoutATokenTheControlRoutesStayOpen() throws Exception {
        int port = start(ControlPolicy.defaults());
        assertEquals(200, RawHttp.postJson(port, "/wake", "").status());
        assertEquals(200, RawHttp.postJson(port, "/wake", "", "Authorization: Bearer anything").status());
    }

    @Test
    void refreshRoutesBeyondTheRateAre429WithRetryAfter() throws Exception {
        int port = start(new ControlPolicy(null, 0.5, 3));
        for (int i = 0; i < 3; i++) {
            assertEquals(200, RawHttp.postJson(port, i % 2 == 0 ? "/wake" : "/rpc_sync_from_bulletin_board", "")
                    .status());
        }
        RawHttp.Response limited = RawHttp.postJson(port, "/rpc_sync_from_bulletin_board", "{}");
        assertEquals(429, limited.status());
        assertEquals("RateLimited", error(limited).path("type").asText());
        assertTrue(error(limited).path("retryable").asBoolean());
        int retryAfter = Integer.parseInt(limited.header("retry-after"));
        assertTrue(retryAfter >= 1 && retryAfter <= 2, "Retry-After " + retryAfter);
        assertEquals(429, RawHttp.postJson(port, "/wake", "").status(), "both routes share one bucket");
        assertEquals(200, RawHttp.exchange(port, "GET", "/health", null).status(), "read-only routes are not limited");
        assertEquals(3, endpoints.called.stream().filter(c -> !c.equals("health")).count());
        assertEquals(2, proxy.stats().rejections("RateLimited"));
    }

    @Test
    void theBucketRefillsAtTheConfiguredRate() {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        ControlAccess access = new ControlAccess(new ControlPolicy(null, 5, 10), now::get);
        for (int i = 0; i < 10; i++) {
            assertNull(access.check("wake", null), "burst call " + i);
        }
        ControlAccess.Refusal refusal = access.check("wake", null);
        assertNotNull(refusal);
        assertEquals("RateLimited", refusal.type());
        assertEquals("1", refusal.response().headers().get("Retry-After"));
        refusal.response().release();
        now.addAndGet(200_000_000L); // 0.2 s at 5/s: one token
        assertNull(access.check("rpc_sync_from_bulletin_board", null));
        ControlAccess.Refusal again = access.check("wake", null);
        assertNotNull(again);
        again.response().release();
        assertNull(access.check("health", null), "read-only routes never take a token");
        now.addAndGet(60_000_000_000L);
        for (int i = 0; i < 10; i++) {
            assertNull(access.check("wake", null), "the bucket holds at most the burst");
        }
        ControlAccess.Refusal full = access.check("wake", null);
        assertNotNull(full);
        full.response().release();
    }

    @Test
    void tokensAreComparedWhole() {
        ControlPolicy p = new ControlPolicy("abc", 5, 10);
        assertTrue(p.tokenMatches("abc"));
        assertFalse(p.tokenMatches("abcd"));
        assertFalse(p.tokenMatches("ab"));
        assertFalse(p.tokenMatches(""));
        assertFalse(p.tokenMatches(null));
        assertFalse(p.toString().contains("abc"), "the token never reaches a log line");
        assertThrows(IllegalArgumentException.class, () -> new ControlPolicy("", 5, 10));
        assertThrows(IllegalArgumentException.class, () -> new ControlPolicy(null, -1, 10));
        assertThrows(IllegalArgumentException.class, () -> new ControlPolicy(null, 5, 0));
    }
}
