package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import dev.stitch.sync.SyncState;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Host mode end to end over loopback: real board, publisher, host applier, reference engine. */
class HostModeLoopbackTest {

    @TempDir
    Path tmp;
    private Path boardRoot;
    private Path base;
    private Path local;
    private FilesystemBulletinBoard board;
    private WeightPublisher publisher;
    private ReferenceEngine engine;
    private Sidecar sidecar;

    @BeforeEach
    void setUp() throws Exception {
        base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        local = tmp.resolve("local");
        boardRoot = tmp.resolve("board");
        board = FilesystemBulletinBoard.create(boardRoot, "run-a", BoardOptions.defaults());
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(0).threads(1).seed(seed).build();
        }
        engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
    }

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
        if (engine != null) {
            engine.close();
        }
        if (publisher != null) {
            publisher.close();
        }
    }

    private void publish(int version, int step) throws Exception {
        try (Weights w = TinyModel.weights(step)) {
            publisher.publish(version, w);
        }
    }

    private Sidecar startSidecar() {
        URI upstream = URI.create(engine.url());
        SidecarConfig config = new SidecarConfig(
                ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withPolling(0, 0).withBackoff(0.1, 0.3)
                        .withBoot(null, 0, local.resolve(".stitch")).withEngineProbeInterval(0.2),
                boardRoot, BoardLayout.STITCH, "host",
                SglangSettings.of(upstream, boardRoot).withHostCheckpoints(local, base).withOptions(3, false, true),
                "replica-0");
        sidecar = Sidecar.start(config, "test");
        return sidecar;
    }

    private int healthStatus() {
        try {
            return Http.get(sidecar.port(), "/health").status();
        } catch (java.io.IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private boolean idleAt(long v) throws InterruptedException {
        return eventually(20_000, () -> sidecar.worker().status().state() == SyncState.IDLE
                && sidecar.worker().status().currentVersion() == v);
    }

    private JsonNode generate(int port, long exact) throws Exception {
        Http.Reply r = Http.post(port, "/generate", "{\"text\": \"hello there\", \"sampling_params\": "
                + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": " + exact + "}}");
        assertEquals(200, r.status(), r.body());
        assertEquals(Long.toString(exact), r.header("x-stitch-weight-version-start"));
        return r.json();
    }

    @Test
    void startupComposesOneReloadAndServesTheTrainersWeights() throws Exception {
        publish(1, 1);
        publish(2, 2);
        startSidecar();
        assertTrue(idleAt(2));
        List<ReferenceEngine.Call> reloads = engine.calls("update_weights_from_disk");
        assertEquals(1, reloads.size(), reloads.toString());
        assertEquals("{\"model_path\":" + Http.JSON.writeValueAsString(local.toString())
                + ",\"weight_version\":\"2\",\"flush_cache\":false}", reloads.get(0).body());
        JsonNode body = generate(sidecar.port(), 2);
        assertEquals(TinyModel.digest(2), body.path("meta_info").path("weights_digest").asText());
        assertEquals("2", body.path("meta_info").path("weight_version").asText());
        assertTrue(Files.readString(local.resolve(".weight_sync/state.json")).contains("\"000002\""));

        // an unchanged checkpoint publishes an empty version: relabel only, no reload
        engine.clearCalls();
        publish(3, 2);
        Http.Reply wake = Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "");
        assertEquals(200, wake.status());
        assertTrue(idleAt(3));
        assertEquals(List.of(), engine.calls("update_weights_from_disk"));
        List<ReferenceEngine.Call> labels = engine.calls("update_weight_version");
        assertEquals(1, labels.size());
        assertEquals("{\"new_version\":\"3\",\"abort_all_requests\":false}", labels.get(0).body());
        assertEquals(true, sidecar.worker().status().lastMetrics().get("skipped_noop_reload"));
        assertEquals(TinyModel.digest(2), generate(sidecar.port(), 3).path("meta_info").path("weights_digest")
                .asText());
        for (ReferenceEngine.Call c : engine.calls()) {
            assertFalse(c.body().replace(" ", "").contains("\"flush_cache\":true"), c.toString());
        }
    }

    @Test
    void engineRestartedFromTheBaseIsDetectedByItsReportAndReloaded() throws Exception {
        publish(1, 1);
        publish(2, 2);
        startSidecar();
        assertTrue(idleAt(2));
        int enginePort = engine.port();
        // a quick restart between two probes: only what the engine reports tells it apart
        engine.close();
        engine = new ReferenceEngine(ReferenceEngine.Config.local(base).withListen("127.0.0.1", enginePort)).start();
        assertEquals(TinyModel.digest(0), engine.weightsDigest());
        assertTrue(eventually(20_000, () -> TinyModel.digest(2).equals(engine.weightsDigest())
                && healthStatus() == 200));
        assertEquals(TinyModel.digest(2), generate(sidecar.port(), 2).path("meta_info").path("weights_digest")
                .asText());
        assertTrue(sidecar.worker().metrics().engineLosses() >= 1);
        publish(3, 3);
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(idleAt(3));
        assertEquals(TinyModel.digest(3), generate(sidecar.port(), 3).path("meta_info").path("weights_digest")
                .asText());
    }

    @Test
    void refusedWrongBaseDeltaIsBypassedThroughTheNextAnchor() throws Exception {
        publish(1, 1);
        startSidecar();
        assertTrue(idleAt(1));
        // version 2 is diffed against weights the board never held: the host applier must refuse it
        publisher.close();
        try (Weights wrongSeed = TinyModel.weights(5)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(0).threads(1).seed(wrongSeed).build();
        }
        publish(2, 2);
        Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "");
        assertTrue(eventually(10_000, () -> sidecar.worker().status().state() == SyncState.ERROR));
        assertEquals(1, sidecar.worker().status().currentVersion());
        assertTrue(sidecar.worker().status().lastSyncError().contains("version 2"),
                sidecar.worker().status().lastSyncError());
        // the trainer notices and publishes version 3 with an anchor
        publisher.close();
        try (Weights seed = TinyModel.weights(2)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(3).threads(1).seed(seed).build();
        }
        publish(3, 3);
        Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "");
        assertTrue(idleAt(3));
        assertEquals("anchor", sidecar.worker().status().lastMetrics().get("plan_kind"));
        assertEquals(3L, sidecar.worker().status().lastMetrics().get("anchor_version"));
        assertEquals(List.of(2L), sidecar.worker().status().lastMetrics().get("refused_versions"));
        assertEquals(TinyModel.digest(3), generate(sidecar.port(), 3).path("meta_info").path("weights_digest")
                .asText());
    }

    @Test
    void corruptArtifactKeepsTheOldVersionAndSaysSo() throws Exception {
        publish(1, 1);
        startSidecar();
        assertTrue(idleAt(1));
        publish(2, 2);
        Path payload;
        try (Stream<Path> files = Files.list(boardRoot.resolve("versions/weight_v000002"))) {
            payload = files.filter(p -> !p.getFileName().toString().equals("manifest.json")).findFirst().orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(payload);
        bytes[bytes.length / 2] ^= 0x5a;
        Files.write(payload, bytes);
        engine.clearCalls();
        Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "{\"target_version\": 2}");
        assertTrue(eventually(10_000, () -> sidecar.worker().status().state() == SyncState.ERROR));
        JsonNode info = Http.get(sidecar.port(), "/server_info").json();
        assertEquals(1, info.path("current_version").asLong());
        assertTrue(info.path("last_sync_error").asText().contains("version 2"), info.toString());
        assertEquals("ERROR", info.path("sync_state").asText());
        Http.Reply health = Http.get(sidecar.port(), "/health");
        assertEquals(503, health.status());
        assertEquals("sync_error", health.json().path("reason").asText());
        assertEquals(List.of(), engine.calls("update_weights_from_disk"));
        assertEquals(TinyModel.digest(1), generate(sidecar.port(), 1).path("meta_info").path("weights_digest")
                .asText());
    }

    @Test
    void corruptDeltaIsBypassedThroughAnAnchor() throws Exception {
        publisher.close();
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(2).threads(1).seed(seed).build();
        }
        publish(1, 1);
        publish(2, 2);
        publish(3, 3);
        JsonNode anchor = Http.JSON.readTree(boardRoot.resolve("versions/weight_v000002/manifest.json").toFile());
        assertTrue(anchor.toString().contains("\"full\""), "version 2 is an anchor: " + anchor);
        Path payload;
        try (Stream<Path> files = Files.list(boardRoot.resolve("versions/weight_v000001"))) {
            payload = files.filter(p -> !p.getFileName().toString().equals("manifest.json")).findFirst().orElseThrow();
        }
        byte[] bytes = Files.readAllBytes(payload);
        bytes[bytes.length - 1] ^= 0x01;
        Files.write(payload, bytes);
        startSidecar();
        assertTrue(idleAt(3));
        assertEquals("anchor", sidecar.worker().status().lastMetrics().get("plan_kind"));
        assertEquals(2L, sidecar.worker().status().lastMetrics().get("anchor_version"));
        assertEquals(1, engine.calls("update_weights_from_disk").size());
        assertEquals(TinyModel.digest(3), generate(sidecar.port(), 3).path("meta_info").path("weights_digest")
                .asText());
    }

    @Test
    void interruptedApplyRebuildsTheLocalCheckpoint() throws Exception {
        publish(1, 1);
        startSidecar();
        assertTrue(idleAt(1));
        sidecar.close();
        sidecar = null;
        // simulate a crash in the middle of applying version 2
        Path state = local.resolve(".weight_sync/state.json");
        JsonNode s = Http.JSON.readTree(state.toFile());
        ((com.fasterxml.jackson.databind.node.ObjectNode) s).put("applying", "000002");
        Files.write(state, Http.JSON.writeValueAsBytes(s));
        publish(2, 2);
        engine.clearCalls();
        startSidecar();
        assertTrue(idleAt(2));
        assertEquals("run-a", sidecar.worker().status().currentRunId());
        Object detail = sidecar.worker().status().lastMetrics().get("stage_detail");
        // the dirty copy was rebuilt from the base at startup, then the whole chain replayed onto it
        assertTrue(detail.toString().contains("local_from=0") && detail.toString().contains("applied_versions=[1, 2]"),
                String.valueOf(detail));
        assertEquals(TinyModel.digest(2), generate(sidecar.port(), 2).path("meta_info").path("weights_digest")
                .asText());
    }
}
