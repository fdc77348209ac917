package dev.stitch.sidecar;
import dev.stitch.sidecar.control.ControlEndpoints;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.engine.SglangSettings;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.EngineAdapter;
import dev.stitch.sync.EngineReport;
import dev.stitch.sync.SyncConfig;
import dev.stitch.sync.SyncPlan;
import dev.stitch.sync.SyncState;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sidecar-owned routes (docs/protocol/sidecar-http.md §5; docs/conformance.md case 35–39) over the real proxy. */
class ControlEndpointsTest {

    @TempDir
    Path tmp;
    private FilesystemBulletinBoard board;
    private final ScriptedEngine engine = new ScriptedEngine();
    private Sidecar sidecar;

    /** An engine adapter whose health and commits the test controls. */
    static final class ScriptedEngine implements EngineAdapter {
        volatile boolean healthy;
        volatile CountDownLatch commitEntered = new CountDownLatch(1);
        volatile CountDownLatch commitRelease;
        volatile boolean failCommits;

        @Override
        public String name() {
            return "scripted";
        }

        @Override
        public String mode() {
            return "engine";
        }

        @Override
        public void prepare() {
        }

        @Override
        public Set<String> supportedBackends() {
            return Set.of("sparse_delta", "full");
        }

        @Override
        public Map<String, Object> stage(SyncPlan plan) {
            return Map.of();
        }

        @Override
        public Map<String, Object> commit(SyncPlan plan) throws Exception {
            commitEntered.countDown();
            CountDownLatch release = commitRelease;
            if (release != null) {
                release.await(30, TimeUnit.SECONDS);
            }
            if (failCommits) {
                throw new IOException("engine answered 500");
            }
            return Map.of();
        }

        @Override
        public void label(long version) {
        }

        @Override
        public void flush() {
        }

        @Override
        public void pause(String mode) {
        }

        @Override
        public void resume() {
        }

        @Override
        public void reset() {
        }

        @Override
        public void abort(String rid) {
        }

        @Override
        public boolean probe() {
            return healthy;
        }

        @Override
        public Optional<EngineReport> report() {
            return healthy ? Optional.of(new EngineReport(null, null, null)) : Optional.empty();
        }

        @Override
        public Optional<String> weightVersionLabel() {
            return Optional.empty();
        }
    }

    @BeforeEach
    void setUp() throws IOException {
        board = FilesystemBulletinBoard.create(tmp.resolve("board"), null, BoardOptions.defaults());
    }

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
    }

    private void publish(long v) throws IOException {
        try (VersionPublication p = board.beginPublish(null, v)) {
            p.writeArtifact("rank0000_flush000000.safetensors", ArtifactKind.TRANSITION,
                    out -> out.write(("delta " + v).getBytes(StandardCharsets.UTF_8)));
            p.commit(ManifestFields.of("sparse_delta", "delta").withTransitionWeights(List.of("w")));
        }
    }

    private int start() {
        URI upstream = URI.create("http://127.0.0.1:9"); // sidecar routes never reach the engine
        SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withPolling(0, 0).withBackoff(0.2, 0.4).withLimits(0, 8, false, 60),
                board.root(), BoardLayout.STITCH, "engine", SglangSettings.of(upstream, board.root()), "replica-7");
        sidecar = Sidecar.start(config, engine, "stitch-test");
        return sidecar.port();
    }

    @Test
    void portAnswersBeforeTheFirstCatchUpAndHealthFollowsTheState() throws Exception {
        publish(1);
        int port = start(); // the engine is not healthy yet: startup waits for it
        try (Socket s = new Socket("127.0.0.1", port)) {
            assertTrue(s.isConnected());
        }
        Http.Reply h = Http.get(port, "/health");
        assertEquals(503, h.status());
        JsonNode body = h.json();
        assertFalse(body.path("ok").asBoolean());
        assertFalse(body.path("ready").asBoolean());
        assertEquals(0, body.path("current_version").asLong());
        assertEquals("initial_sync_incomplete", body.path("reason").asText());

        engine.healthy = true;
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()));
        h = Http.get(port, "/health");
        assertEquals(200, h.status());
        assertTrue(h.json().path("ok").asBoolean());
        assertEquals(1, h.json().path("current_version").asLong());
        assertTrue(h.json().path("reason").isNull());

        // a failed commit: ERROR with the engine in an unknown state ⇒ 503
        engine.failCommits = true;
        publish(2);
        Http.post(port, "/wake", "");
        assertTrue(eventually(10_000, () -> sidecar.worker().status().state() == SyncState.ERROR));
        h = Http.get(port, "/health");
        assertEquals(503, h.status());
        assertEquals("engine_state_unknown", h.json().path("reason").asText());
        Http.Reply versioned = Http.post(port, "/generate", "{\"text\":\"x\"}");
        assertEquals(503, versioned.status());
        assertTrue(versioned.body().contains("EngineUnavailable"), versioned.body());

        engine.failCommits = false;
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()
                && sidecar.worker().status().currentVersion() == 2));
        assertEquals(200, Http.get(port, "/health").status());
    }

    @Test
    void serverInfoHasEveryUpstreamKeyWithItsType() throws Exception {
        engine.healthy = true;
        publish(1);
        int port = start();
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()));
        JsonNode info = Http.get(port, "/server_info").json();
        assertEquals("replica-7", info.path("run_id").asText());
        assertTrue(info.path("backend").isTextual());
        assertEquals("quiesce", info.path("commit_mode").asText());
        assertTrue(info.path("current_run_id").isNull());
        assertTrue(info.path("current_version").isIntegralNumber());
        assertEquals(1, info.path("current_version").asLong());
        assertTrue(info.path("latest_seen_version").isIntegralNumber());
        assertTrue(info.has("queued_target_version"));
        assertTrue(info.path("queued_target_version").isNull() || info.path("queued_target_version").isIntegralNumber());
        assertEquals("IDLE", info.path("sync_state").asText());
        assertTrue(info.path("last_sync_error").isNull());
        assertTrue(info.path("sync_task_active").isBoolean());
        assertTrue(info.path("active_requests").isIntegralNumber());
        assertTrue(info.path("inflight_exact_versions").isObject());
        assertTrue(info.path("metrics").isObject());
        assertTrue(info.path("metrics").has("commit_s"), info.path("metrics").toString());
        for (String k : List.of("protocol_version", "ready", "ready_reason", "layout", "engine_mode", "engine_state",
                "latest_run_id", "behind_by", "wanted_version", "admission", "consecutive_errors", "next_retry_at",
                "last_commit_at", "engine_reachable", "software_version")) {
            assertTrue(info.has(k), k);
        }
        assertEquals("stitch", info.path("layout").asText());
        assertEquals("consistent", info.path("engine_state").asText());
        assertEquals("open", info.path("admission").asText());
        assertEquals(0, info.path("behind_by").asLong());

        JsonNode v = Http.get(port, "/get_weight_version").json();
        assertTrue(v.path("weight_version").isTextual());
        assertEquals("1", v.path("weight_version").asText());
    }

    @Test
    void rpcSyncParsesItsBodyAndWakeReturnsServerInfo() throws Exception {
        engine.healthy = true;
        int port = start();
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()));
        Http.Reply empty = Http.post(port, "/rpc_sync_from_bulletin_board", "");
        assertEquals(200, empty.status());
        assertTrue(empty.json().path("accepted").asBoolean());
        assertTrue(empty.json().has("current_version"));
        assertTrue(empty.json().has("queued_target_version"));
        assertTrue(empty.json().has("sync_state"));
        assertEquals(200, Http.post(port, "/rpc_sync_from_bulletin_board", "{\"target_version\":\"4\"}").status());
        assertEquals(200, Http.post(port, "/rpc_sync_from_bulletin_board", "{\"target_version\":4}").status());
        assertEquals(200, Http.post(port, "/rpc_sync_from_bulletin_board", "{\"target_version\":null}").status());
        for (String bad : List.of("{\"target_version\":\"x\"}", "{\"target_version\":-1}",
                "{\"target_version\":1.5}", "{not json", "[1]")) {
            Http.Reply r = Http.post(port, "/rpc_sync_from_bulletin_board", bad);
            assertEquals(400, r.status(), bad);
            assertEquals("InvalidRequest", r.json().path("error").path("type").asText(), bad);
        }
        assertEquals(4, sidecar.worker().status().wantedVersion());
        Http.Reply wake = Http.post(port, "/wake", "ignored body");
        assertEquals(200, wake.status());
        assertTrue(wake.json().has("sync_state"));
        assertTrue(wake.json().has("inflight_exact_versions"));
    }

    @Test
    void metricsAnswerWhileACommitHoldsTheGate() throws Exception {
        engine.healthy = true;
        int port = start();
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()));
        engine.commitRelease = new CountDownLatch(1);
        publish(1);
        sidecar.worker().wake(OptionalLong.empty(), true);
        assertTrue(engine.commitEntered.await(10, TimeUnit.SECONDS));
        assertEquals("closed_all", sidecar.worker().status().admission());
        Http.Reply m = Http.get(port, "/metrics");
        assertEquals(200, m.status());
        assertEquals("text/plain; version=0.0.4; charset=utf-8", m.header("content-type"));
        String text = m.body();
        assertTrue(text.contains("stitch_sync_state{state=\"COMMITTING\"} 1"), text);
        Http.Reply info = Http.get(port, "/server_info");
        assertEquals("closed_all", info.json().path("admission").asText());
        engine.commitRelease.countDown();
        assertTrue(eventually(10_000, () -> sidecar.worker().status().currentVersion() == 1));

        text = Http.get(port, "/metrics").body();
        for (String family : List.of("stitch_current_version 1", "stitch_latest_seen_version 1",
                "stitch_behind_versions 0", "stitch_ready 1", "stitch_active_requests 0",
                "stitch_inflight_exact_requests 0", "stitch_engine_state_unknown 0", "stitch_consecutive_sync_errors 0",
                "stitch_sync_passes_total{outcome=\"ok\"}", "stitch_commits_total{kind=\"delta\"} 1",
                "stitch_requests_total", "stitch_rejections_total", "stitch_artifact_verify_failures_total 0",
                "stitch_drain_preempted_requests_total 0", "stitch_unverified_artifacts_total 0",
                "stitch_applied_bytes_total 7", "stitch_commit_duration_seconds_count 1",
                "stitch_engine_pause_seconds_count", "stitch_drain_wait_seconds_count 1",
                "stitch_stage_duration_seconds_count", "stitch_board_refresh_seconds_count")) {
            assertTrue(text.contains(family), family + " in\n" + text);
        }
        assertPrometheusText(text);
    }

    /** Every non-comment line is {@code name{labels} value} with a numeric value; every family has a TYPE. */
    private static void assertPrometheusText(String text) {
        Set<String> typed = new java.util.HashSet<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                assertEquals(4, parts.length, line);
                assertTrue(typed.add(parts[2]), "duplicate family " + parts[2]);
                continue;
            }
            if (line.startsWith("#") || line.isEmpty()) {
                continue;
            }
            assertTrue(line.matches("[a-zA-Z_:][a-zA-Z0-9_:]*(\\{[^}]*\\})? -?[0-9.eE+-]+|.* \\+Inf|.* NaN"), line);
            String name = line.split("[ {]")[0];
            String family = name.replaceAll("_(bucket|sum|count)$", "");
            assertTrue(typed.contains(name) || typed.contains(family), "no TYPE for " + name);
        }
        assertNotNull(text);
    }
}
