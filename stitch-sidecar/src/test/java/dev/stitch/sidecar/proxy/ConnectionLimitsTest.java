package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.sync.AdmissionGate;
import io.netty.channel.ChannelHandlerContext;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Header and idle timeouts and the connection cap of the data plane (security.md, "Limits"). */
class ConnectionLimitsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PINNED = "{\"text\":\"hi\",\"weight_version\":{\"exact_version\":3}}";

    private StubEngine engine;
    private AdmissionGate gate;
    private ProxyServer proxy;
    private final List<Socket> sockets = new ArrayList<>();

    @BeforeEach
    void startEngine() throws Exception {
        engine = new StubEngine();
        gate = new AdmissionGate(null, 3);
        gate.latestSeen(3);
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        engine.close();
    }

    private int start(ConnectionLimits limits) {
        proxy = new ProxyServer(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withListen("127.0.0.1", 0).withIoThreads(1).withLimits(limits), gate, new RecordingEndpoints()).start();
        return proxy.port();
    }

    private Socket idleSocket(int port) throws IOException {
        Socket s = new Socket("127.0.0.1", port);
        sockets.add(s);
        return s;
    }

    private static long millisSince(long t0) {
        return (System.nanoTime() - t0) / 1_000_000;
    }

    private static boolean eventually(long millis, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return condition.getAsBoolean();
    }

    /** Reads until the server closes the connection; returns how long that took, or fails after 5 s. */
    private static long millisUntilClosed(Socket s) throws IOException {
        long t0 = System.nanoTime();
        s.setSoTimeout(5_000);
        while (s.getInputStream().read() >= 0) {
            // a response before the close is allowed; only the close matters here
        }
        return millisSince(t0);
    }

    @Test
    void idleConnectionsBeyondTheCapLeaveHealthAndPinnedRequestsAnswering() throws Exception {
        int cap = 200;
        int idle = 1_000;
        int port = start(new ConnectionLimits(Duration.ofSeconds(60), Duration.ofSeconds(60), cap));
        for (int i = 0; i < idle; i++) {
            idleSocket(port);
        }
        assertTrue(eventually(10_000, () -> proxy.stats().connectionsClosed("evicted") >= idle - cap),
                "idle connections beyond the cap are closed, oldest first: "
                        + proxy.stats().connectionsClosed("evicted"));
        assertTrue(proxy.stats().openConnections() <= cap, "held: " + proxy.stats().openConnections());

        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            RawHttp.Response health = RawHttp.exchange(port, "GET", "/health", null);
            long healthMs = millisSince(t0);
            assertEquals(200, health.status());
            assertTrue(healthMs < 1_000, "/health took " + healthMs + " ms");

            t0 = System.nanoTime();
            RawHttp.Response pinned = RawHttp.postJson(port, "/generate", PINNED);
            long pinnedMs = millisSince(t0);
            assertEquals(200, pinned.status(), pinned.text());
            assertEquals("3", pinned.header("x-stitch-weight-version-start"));
            assertTrue(pinnedMs < 1_000, "pinned /generate took " + pinnedMs + " ms");
        }
        // The newest idle connections are the ones still held.
        Socket newest = sockets.getLast();
        newest.getOutputStream().write("GET /health HTTP/1.1\r\nHost: t\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        newest.setSoTimeout(5_000);
        assertTrue(new String(newest.getInputStream().readNBytes(12), StandardCharsets.US_ASCII).endsWith("200"));
    }

    @Test
    void busyConnectionsAtTheCapLeaveHealthAnsweringThroughTheReserve() throws Exception {
        List<ChannelHandlerContext> held = new CopyOnWriteArrayList<>();
        engine.script = (ctx, req) -> held.add(ctx); // the engine never answers: both generations stay busy
        int port = start(new ConnectionLimits(Duration.ofSeconds(60), Duration.ofSeconds(60), 2));
        for (int i = 0; i < 2; i++) {
            RawHttp busy = new RawHttp(port);
            sockets.add(busy.socket);
            busy.send("POST", "/generate", PINNED.getBytes(StandardCharsets.UTF_8), "Content-Type: application/json");
        }
        assertTrue(eventually(5_000, () -> held.size() == 2));

        long t0 = System.nanoTime();
        RawHttp.Response health = RawHttp.exchange(port, "GET", "/health", null);
        assertEquals(200, health.status());
        assertEquals("close", health.header("connection"), "a reserved connection frees its slot after one answer");
        assertTrue(millisSince(t0) < 1_000);

        RawHttp.Response refused = RawHttp.postJson(port, "/generate", PINNED);
        assertEquals(503, refused.status());
        assertEquals("TooManyConnections", JSON.readTree(refused.body()).path("error").path("type").asText());
        assertEquals("1", refused.header("retry-after"));
        assertEquals(2, held.size(), "nothing over the cap reaches the engine");

        // Fill the reserve with idle sockets; the next connection is closed as soon as it is accepted.
        int reserve = new ConnectionLimits(Duration.ofSeconds(1), Duration.ofSeconds(1), 2).reservedConnections();
        for (int i = 0; i < reserve; i++) {
            idleSocket(port);
        }
        assertTrue(eventually(5_000, () -> proxy.stats().openConnections() == 2 + reserve));
        Socket beyond = idleSocket(port);
        assertTrue(millisUntilClosed(beyond) < 1_000);
        assertEquals(1, proxy.stats().connectionsClosed("refused"));
    }

    @Test
    void aPartialHeadIsClosedAfterTheHeaderTimeout() throws Exception {
        int port = start(new ConnectionLimits(Duration.ofMillis(300), Duration.ofSeconds(30), 100));
        Socket silent = idleSocket(port);
        Socket partial = idleSocket(port);
        partial.getOutputStream().write("GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: ".getBytes(StandardCharsets.US_ASCII));
        long silentMs = millisUntilClosed(silent);
        long partialMs = millisUntilClosed(partial);
        assertTrue(silentMs >= 200 && silentMs < 2_000, "silent connection closed after " + silentMs + " ms");
        assertTrue(partialMs < 2_000, "partial head closed after " + partialMs + " ms");
        assertEquals(2, proxy.stats().connectionsClosed("header_timeout"));
        assertEquals(200, RawHttp.exchange(port, "GET", "/health", null).status(), "a prompt request is served");
    }

    @Test
    void idleKeepAliveConnectionsAndStalledBodiesAreClosedAfterTheIdleTimeout() throws Exception {
        int port = start(new ConnectionLimits(Duration.ofMillis(300), Duration.ofMillis(900), 100));
        try (RawHttp c = new RawHttp(port)) {
            c.send("GET", "/health", null);
            assertEquals(200, c.read().status());
            Thread.sleep(500); // longer than the header timeout: between requests the idle timeout applies
            c.send("GET", "/health", null);
            assertEquals(200, c.read().status());
            long closedMs = millisUntilClosed(c.socket);
            assertTrue(closedMs >= 600 && closedMs < 3_000, "idle connection closed after " + closedMs + " ms");
        }
        assertEquals(1, proxy.stats().connectionsClosed("idle_timeout"));

        try (RawHttp c = new RawHttp(port)) {
            c.out.write(("POST /generate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{\"text\":").getBytes(StandardCharsets.US_ASCII));
            c.out.flush();
            long closedMs = millisUntilClosed(c.socket);
            assertTrue(closedMs < 3_000, "stalled body closed after " + closedMs + " ms");
        }
        assertEquals(2, proxy.stats().connectionsClosed("idle_timeout"));
        assertTrue(engine.seen.isEmpty(), "nothing of the stalled request was forwarded");
    }

    @Test
    void aLongRequestIsNotCutByTheIdleTimeout() throws Exception {
        List<ChannelHandlerContext> held = new CopyOnWriteArrayList<>();
        engine.script = (ctx, req) -> held.add(ctx);
        int port = start(new ConnectionLimits(Duration.ofMillis(200), Duration.ofMillis(300), 100));
        try (RawHttp c = new RawHttp(port)) {
            c.send("POST", "/generate", PINNED.getBytes(StandardCharsets.UTF_8), "Content-Type: application/json");
            assertTrue(eventually(5_000, () -> held.size() == 1));
            Thread.sleep(1_000); // several idle timeouts while the engine works
            held.getFirst().writeAndFlush(StubEngine.json(200,
                    "{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"3\"}}"));
            RawHttp.Response r = c.read();
            assertEquals(200, r.status());
        }
        assertEquals(0, proxy.stats().connectionsClosed("idle_timeout"));
    }
}
