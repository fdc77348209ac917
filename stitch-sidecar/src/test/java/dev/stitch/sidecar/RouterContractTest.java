package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.router.RouterLink;
import dev.stitch.sync.CommitMode;
import dev.stitch.sync.SyncConfig;
import dev.stitch.sync.SyncState;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a version-aware router relies on (docs/protocol/sidecar-http.md §5.1-5.2): the {@code /stitch/state} long
 * poll, and the commit permission asked before each commit, against the reference engine over loopback.
 */
class RouterContractTest {

    /** Far beyond any prompt answer, far below the 25 s the long polls below would wait without a change. */
    private static final long DEADLINE_S = 15;

    @TempDir
    Path tmp;
    private Path boardRoot;
    private WeightPublisher publisher;
    private ReferenceEngine engine;
    private Sidecar sidecar;
    private HttpServer router;

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
        if (router != null) {
            router.stop(0);
        }
        if (engine != null) {
            engine.close();
        }
        if (publisher != null) {
            publisher.close();
        }
    }

    private void setUp() throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        boardRoot = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardRoot, "run-a", BoardOptions.defaults());
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a").backends(DeltaFormat.SPARSE_DELTA)
                    .sparseEncoding(SparseEncoding.INDICES).anchorInterval(0).threads(1).seed(seed).build();
        }
        engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
    }

    private void publish(int version) throws Exception {
        try (Weights w = TinyModel.weights(version)) {
            publisher.publish(version, w);
        }
    }

    private void startSidecar(RouterLink link) {
        URI upstream = URI.create(engine.url());
        SidecarConfig config = new SidecarConfig(
                ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withCommitMode(CommitMode.QUIESCE).withPolling(0, 0).withBackoff(0.1, 0.3)
                        .withDrain(5, 5).withBoot(null, 0, null),
                boardRoot, BoardLayout.STITCH, "engine", SglangSettings.of(upstream, boardRoot), null)
                .withRouter(link);
        sidecar = Sidecar.start(config, "test");
    }

    private boolean idleAt(long v) throws InterruptedException {
        return eventually(20_000, () -> sidecar.worker().status().state() == SyncState.IDLE
                && sidecar.worker().status().currentVersion() == v && sidecar.worker().status().ready());
    }

    private JsonNode state(String query) throws Exception {
        Http.Reply r = Http.get(sidecar.port(), "/stitch/state" + query);
        assertEquals(200, r.status(), r.body());
        return r.json();
    }

    private long counter(String name) throws Exception {
        for (String line : Http.get(sidecar.port(), "/metrics").body().split("\n")) {
            if (line.startsWith(name + " ")) {
                return (long) Double.parseDouble(line.substring(name.length() + 1).strip());
            }
        }
        throw new AssertionError(name + " not in /metrics");
    }

    @Test
    void stateAnswersAtOnceWithoutAfterOrWhenAfterIsBehind() throws Exception {
        setUp();
        publish(1);
        startSidecar(null);
        assertTrue(idleAt(1));
        JsonNode now = state("");
        long seq = now.get("seq").asLong();
        assertEquals(1, now.get("served_version").asLong());
        assertEquals(1, now.get("latest_seen_version").asLong());
        assertEquals("run-a", now.get("run_id").asText());
        assertEquals("IDLE", now.get("state").asText());
        assertTrue(now.get("ready").asBoolean());
        assertEquals("open", now.get("admission").asText());
        assertEquals(0, now.get("active_requests").asInt());
        assertTrue(now.get("inflight_exact_versions").isObject());
        assertEquals(false, now.get("committing").asBoolean());
        // timeout_ms far beyond the deadline: only an answer at once passes
        JsonNode behind = Http.getAsync(sidecar.port(), "/stitch/state?after=" + (seq - 1) + "&timeout_ms=25000")
                .get(DEADLINE_S, TimeUnit.SECONDS).json();
        assertEquals(seq, behind.get("seq").asLong());
        assertEquals(400, Http.get(sidecar.port(), "/stitch/state?after=x").status());
    }

    @Test
    void longPollReturnsWhenACommitChangesTheServedVersion() throws Exception {
        setUp();
        publish(1);
        startSidecar(null);
        assertTrue(idleAt(1));
        long seq = state("").get("seq").asLong();
        CompletableFuture<Http.Reply> parked = Http.getAsync(sidecar.port(),
                "/stitch/state?after=" + seq + "&timeout_ms=25000");
        publish(2);
        Http.post(sidecar.port(), "/wake", "");
        // Follow the stream as a router does: every answer carries a newer seq, the last one version 2. A stream
        // that did not wake its waiters would make each poll last 25 s and miss the deadline.
        JsonNode seen = parked.get(DEADLINE_S, TimeUnit.SECONDS).json();
        while (seen.get("served_version").asLong() != 2 || seen.get("committing").asBoolean()) {
            assertTrue(seen.get("seq").asLong() > seq, seen.toString());
            seq = seen.get("seq").asLong();
            seen = Http.getAsync(sidecar.port(), "/stitch/state?after=" + seq + "&timeout_ms=25000")
                    .get(DEADLINE_S, TimeUnit.SECONDS).json();
        }
        assertTrue(seen.get("seq").asLong() > seq);
        assertEquals("open", seen.get("admission").asText());
    }

    @Test
    void longPollTimesOutWithTheSameSeq() throws Exception {
        setUp();
        publish(1);
        startSidecar(null);
        assertTrue(idleAt(1));
        JsonNode before = state("");
        long seq = before.get("seq").asLong();
        JsonNode after = state("?after=" + seq + "&timeout_ms=200");
        assertEquals(seq, after.get("seq").asLong());
        assertEquals(before, after);
    }

    /** A fake router: answers each commit-permission question from {@code answers}, the last one from then on. */
    private List<JsonNode> startRouter(List<String> answers) throws Exception {
        List<JsonNode> asked = new CopyOnWriteArrayList<>();
        AtomicInteger n = new AtomicInteger();
        router = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        router.createContext("/stitch/commit_permission", ex -> {
            JsonNode q = Http.JSON.readTree(ex.getRequestBody().readAllBytes());
            ((com.fasterxml.jackson.databind.node.ObjectNode) q).put("served_when_asked",
                    sidecar.worker().status().currentVersion());
            asked.add(q);
            byte[] body = answers.get(Math.min(n.getAndIncrement(), answers.size() - 1))
                    .getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        router.start();
        return asked;
    }

    @Test
    void deniedCommitWaitsForTheRoutersGrant() throws Exception {
        setUp();
        publish(1);
        List<JsonNode> asked = startRouter(List.of("{\"granted\": false, \"retry_after_ms\": 1000}",
                "{\"granted\": false, \"retry_after_ms\": 1000}", "{\"granted\": true}"));
        startSidecar(new RouterLink(URI.create("http://127.0.0.1:" + router.getAddress().getPort()), null,
                "replica-a", Duration.ofSeconds(2)));
        assertTrue(idleAt(1));
        assertEquals(List.of(), asked, "the initial catch-up is not asked about");
        publish(2);
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(eventually(20_000, () -> !asked.isEmpty()));
        assertTrue(eventually(20_000, () -> "WAITING_FOR_ROUTER".equals(stateLabel())));
        assertEquals(1, sidecar.worker().status().currentVersion());
        assertTrue(idleAt(2));
        assertEquals(3, asked.size(), asked.toString());
        for (JsonNode q : asked) {
            assertEquals("replica-a", q.get("replica").asText());
            assertEquals(1, q.get("from").asLong());
            assertEquals(2, q.get("to").asLong());
            assertEquals(1, q.get("served_when_asked").asLong(), "committed before the grant");
        }
        assertEquals(2, counter("stitch_router_denials_total"));
        assertEquals(0, counter("stitch_router_unreachable_total"));
    }

    private String stateLabel() {
        try {
            return state("").get("state").asText();
        } catch (Exception e) {
            return null;
        }
    }

    @Test
    void unreachableRouterDoesNotHoldTheCommitBack() throws Exception {
        setUp();
        publish(1);
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        startSidecar(new RouterLink(URI.create("http://127.0.0.1:" + closedPort), null, "replica-a",
                Duration.ofSeconds(2)));
        assertTrue(idleAt(1));
        publish(2);
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(idleAt(2));
        assertTrue(counter("stitch_router_unreachable_total") >= 1);
        assertEquals(0, counter("stitch_router_denials_total"));
    }
}
