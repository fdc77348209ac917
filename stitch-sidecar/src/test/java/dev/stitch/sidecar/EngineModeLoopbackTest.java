package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
import dev.stitch.sync.CommitMode;
import dev.stitch.sync.SyncConfig;
import dev.stitch.sync.SyncState;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Engine mode over loopback: the reference engine applies slime v1 sparse deltas straight from the
 * board; the sidecar sends the bodies of docs/protocol/sync-and-engines.md §7.2 and gates traffic around them.
 */
class EngineModeLoopbackTest {

    @TempDir
    Path tmp;
    private Path boardRoot;
    private WeightPublisher publisher;
    private ReferenceEngine engine;
    private Sidecar sidecar;

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

    private void setUp(Duration tokenLatency) throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        boardRoot = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardRoot, "run-a", BoardOptions.defaults());
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a").backends(DeltaFormat.SPARSE_DELTA)
                    .sparseEncoding(SparseEncoding.INDICES).anchorInterval(0).threads(1).seed(seed).build();
        }
        engine = new ReferenceEngine(ReferenceEngine.Config.local(base).withTokenLatency(tokenLatency)).start();
    }

    private void publish(int version, int step) throws Exception {
        try (Weights w = TinyModel.weights(step)) {
            publisher.publish(version, w);
        }
    }

    private Sidecar startSidecar(CommitMode mode, double drainTimeoutS) {
        return startSidecar(mode, drainTimeoutS, null);
    }

    private Sidecar startSidecar(CommitMode mode, double drainTimeoutS, Path stateDir) {
        return startSidecar(mode, drainTimeoutS, stateDir, 0.2);
    }

    private Sidecar startSidecar(CommitMode mode, double drainTimeoutS, Path stateDir, double probeIntervalS) {
        URI upstream = URI.create(engine.url());
        SidecarConfig config = new SidecarConfig(
                ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withCommitMode(mode).withPolling(0, 0).withBackoff(0.1, 0.3)
                        .withDrain(drainTimeoutS, 5).withBoot(null, 0, stateDir)
                        .withEngineProbeInterval(probeIntervalS),
                boardRoot, BoardLayout.STITCH, "engine", SglangSettings.of(upstream, boardRoot), null);
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

    @Test
    void engineRestartFromTheBaseIsReestablishedBeforeAnythingIsAdmitted() throws Exception {
        setUp(Duration.ZERO);
        Path base = tmp.resolve("base");
        publish(1, 1);
        publish(2, 2);
        // a request cut off by the stop may hold its lease until the drain preempts it
        startSidecar(CommitMode.QUIESCE, 2);
        assertTrue(idleAt(2));
        int enginePort = engine.port();
        java.util.Map<Long, String> digests = java.util.Map.of(0L, TinyModel.digest(0), 1L, TinyModel.digest(1),
                2L, TinyModel.digest(2), 3L, TinyModel.digest(3));
        List<String> mislabeled = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicInteger served = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread client = new Thread(() -> {
            while (running.get()) {
                try {
                    Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"x\", "
                            + "\"sampling_params\": {\"max_new_tokens\": 1}}");
                    if (r.status() == 200) {
                        served.incrementAndGet();
                        long stamped = Long.parseLong(r.header("x-stitch-weight-version-start"));
                        String digest = r.json().path("meta_info").path("weights_digest").asText();
                        if (!digest.equals(digests.get(stamped))) {
                            mislabeled.add("stamped " + stamped + " but served " + digest);
                        }
                    }
                } catch (Exception e) {
                    // connection errors while the engine is down are expected
                }
            }
        });
        client.start();
        try {
            assertTrue(eventually(5000, () -> served.get() > 5));
            engine.close();
            long stopped = System.nanoTime();
            assertTrue(eventually(5000, () -> healthStatus() == 503));
            assertTrue(System.nanoTime() - stopped < Duration.ofSeconds(3).toNanos(),
                    "readiness turns 503 within the probe timeout");
            assertEquals("engine_unreachable", Http.get(sidecar.port(), "/health").json().path("reason").asText());
            Http.Reply refused = Http.post(sidecar.port(), "/generate", "{\"text\": \"x\", "
                    + "\"sampling_params\": {\"max_new_tokens\": 1}}");
            assertEquals(503, refused.status(), refused.body());

            // the engine comes back from its base checkpoint, as after a crash
            engine = new ReferenceEngine(ReferenceEngine.Config.local(base).withListen("127.0.0.1", enginePort))
                    .start();
            assertTrue(eventually(20_000, () -> healthStatus() == 200));
            assertEquals(TinyModel.digest(2), engine.weightsDigest());
            int before = served.get();
            assertTrue(eventually(5000, () -> served.get() > before + 5));
            publish(3, 3);
            Http.post(sidecar.port(), "/wake", "");
            assertTrue(idleAt(3));
            int after = served.get();
            assertTrue(eventually(5000, () -> served.get() > after + 5));
        } finally {
            running.set(false);
            client.join(10_000);
        }
        assertEquals(List.of(), mislabeled);
        assertEquals(TinyModel.digest(3), engine.weightsDigest());
        assertEquals("3", engine.weightVersion());
        assertTrue(sidecar.worker().metrics().engineLosses() >= 1);
    }

    /**
     * Sends versioned requests until {@code running} drops and records every response whose stamp is not
     * the version whose weights produced it, or that is stamped with {@code refused}.
     */
    private Thread auditStamps(java.util.concurrent.atomic.AtomicBoolean running, java.util.Map<Long, String> digests,
                               long refused, List<String> mislabeled) {
        Thread client = new Thread(() -> {
            while (running.get()) {
                try {
                    Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"x\", "
                            + "\"sampling_params\": {\"max_new_tokens\": 1}}");
                    if (r.status() == 200) {
                        long start = Long.parseLong(r.header("x-stitch-weight-version-start"));
                        long end = Long.parseLong(r.header("x-stitch-weight-version-end"));
                        String digest = r.json().path("meta_info").path("weights_digest").asText();
                        if (start == refused || end == refused || !digest.equals(digests.get(start))) {
                            mislabeled.add("stamped " + start + ".." + end + " but served " + digest);
                        }
                    }
                } catch (Exception e) {
                    // 503s and reconnects while the engine is re-established are expected
                }
            }
        });
        client.start();
        return client;
    }

    private void useWrongBasePublisher() throws Exception {
        // version 2 is diffed against weights the board never held; its manifest records the true digest
        publisher.close();
        try (Weights wrongSeed = TinyModel.weights(5)) {
            publisher = WeightPublisher.builder().board(boardRoot).runId("run-a").backends(DeltaFormat.SPARSE_DELTA)
                    .sparseEncoding(SparseEncoding.INDICES).anchorInterval(0).recordWeightsDigest(true).threads(1)
                    .seed(wrongSeed).build();
        }
    }

    private void useAnchoringPublisher(int seedStep, int anchorInterval) throws Exception {
        publisher.close();
        try (Weights seed = TinyModel.weights(seedStep)) {
            publisher = WeightPublisher.builder().board(boardRoot).runId("run-a")
                    .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).sparseEncoding(SparseEncoding.INDICES)
                    .anchorInterval(anchorInterval).recordWeightsDigest(true).threads(1).seed(seed).build();
        }
    }

    @Test
    void wrongBaseSparseDeltaIsRefusedAndTheSidecarEndsAtTheNextAnchor() throws Exception {
        setUp(Duration.ZERO);
        publish(1, 1);
        startSidecar(CommitMode.QUIESCE, 2);
        assertTrue(idleAt(1));
        java.util.Map<Long, String> digests = java.util.Map.of(0L, TinyModel.digest(0), 1L, TinyModel.digest(1),
                3L, TinyModel.digest(3));
        List<String> mislabeled = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread client = auditStamps(running, digests, 2, mislabeled);
        try {
            useWrongBasePublisher();
            publish(2, 2);
            Http.post(sidecar.port(), "/wake", "");
            // the engine applies the delta without complaint; its digest then disagrees with the manifest's
            assertTrue(eventually(20_000, () -> sidecar.worker().status().state() == SyncState.ERROR));
            String error = sidecar.worker().status().lastSyncError();
            assertTrue(error.contains("version 2 was refused") && error.contains("newer anchor"), error);
            assertEquals(List.of(2L), sidecar.worker().status().lastMetrics().get("refused_versions"));
            assertEquals(0, sidecar.worker().status().currentVersion(), "no anchor bypasses 2: the engine is reset");
            assertEquals(TinyModel.digest(0), engine.weightsDigest());
            assertEquals(503, healthStatus());
            assertEquals(1, engine.calls("update_weights_from_disk").stream()
                    .filter(c -> c.json().path("weight_version").asText().equals("2")).count(), "never retried");

            // the trainer publishes version 3 with an anchor
            useAnchoringPublisher(2, 3);
            publish(3, 3);
            Http.post(sidecar.port(), "/wake", "");
            assertTrue(idleAt(3));
            assertEquals("anchor", sidecar.worker().status().lastMetrics().get("plan_kind"));
            assertEquals(3L, sidecar.worker().status().lastMetrics().get("anchor_version"));
            assertTrue(eventually(5000, () -> healthStatus() == 200));
        } finally {
            running.set(false);
            client.join(10_000);
        }
        assertEquals(List.of(), mislabeled);
        assertEquals(TinyModel.digest(3), engine.weightsDigest());
        assertEquals("3", engine.weightVersion());
        assertTrue(sidecar.worker().metrics().refusedVersions() >= 1);
    }

    @Test
    void aRefusedDeltaWithAnAnchorBehindItIsReestablishedThroughTheAnchorWithoutAReset() throws Exception {
        setUp(Duration.ZERO);
        publish(1, 1);
        startSidecar(CommitMode.IN_PLACE, 2);
        assertTrue(idleAt(1));
        useWrongBasePublisher();
        publish(2, 2);
        useAnchoringPublisher(2, 3);
        publish(3, 3);
        engine.clearCalls();
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(idleAt(3));
        List<String> loads = new ArrayList<>();
        for (ReferenceEngine.Call c : engine.calls("update_weights_from_disk")) {
            loads.add(c.json().path("load_format").asText() + ":" + c.json().path("weight_version").asText());
        }
        // the delta path 2, 3 is tried first; 2 is refused after the fact, and the anchor replaces every weight
        assertEquals(List.of("delta:2", "auto:3"), loads);
        assertEquals(List.of(2L), sidecar.worker().status().lastMetrics().get("refused_versions"));
        assertEquals(TinyModel.digest(3), engine.weightsDigest());
        assertEquals(200, healthStatus());
    }

    @Test
    void engineBackOnItsBaseBetweenTwoProbesGets503InsteadOfAFalseStampAndIsProbedAtOnce() throws Exception {
        setUp(Duration.ZERO);
        Path base = tmp.resolve("base");
        publish(1, 1);
        publish(2, 2);
        startSidecar(CommitMode.QUIESCE, 2, null, 30); // the periodic probe will not run during this test
        assertTrue(idleAt(2));
        String request = "{\"text\": \"x\", \"sampling_params\": {\"max_new_tokens\": 1}}";
        Http.Reply before = Http.post(sidecar.port(), "/generate", request);
        assertEquals(200, before.status());
        assertEquals(TinyModel.digest(2), before.json().path("meta_info").path("weights_digest").asText());

        // the engine comes back on its base checkpoint between two requests, long before the next probe (a
        // reload behind the sidecar's back: the same weights and boot label as a restart, on the same connections)
        Http.Reply reload = Http.post(engine.port(), "/update_weights_from_disk", "{\"model_path\": "
                + Http.JSON.writeValueAsString(base.toString()) + ", \"weight_version\": \"default\", "
                + "\"flush_cache\": false}");
        assertEquals(200, reload.status(), reload.body());
        assertEquals(TinyModel.digest(0), engine.weightsDigest());
        long restarted = System.nanoTime();
        Http.Reply after = Http.post(sidecar.port(), "/generate", request);
        assertEquals(503, after.status(), after.body());
        assertEquals("EngineUnavailable", after.json().path("error").path("type").asText());
        assertEquals(null, after.header("x-stitch-weight-version-start"));

        // the data plane's report makes the worker probe at once: lost, re-established, caught up again
        assertTrue(eventually(5000, () -> sidecar.worker().metrics().engineLosses() >= 1));
        assertTrue(System.nanoTime() - restarted < Duration.ofSeconds(5).toNanos(), "well before the 30 s probe");
        assertTrue(idleAt(2));
        assertTrue(eventually(5000, () -> healthStatus() == 200));
        Http.Reply caughtUp = Http.post(sidecar.port(), "/generate", request);
        assertEquals(200, caughtUp.status());
        assertEquals("2", caughtUp.header("x-stitch-weight-version-start"));
        assertEquals(TinyModel.digest(2), caughtUp.json().path("meta_info").path("weights_digest").asText());
    }

    @Test
    void appliesEachVersionInOrderWithTheExactBodies() throws Exception {
        setUp(Duration.ZERO);
        publish(1, 1);
        publish(2, 2);
        startSidecar(CommitMode.QUIESCE, 60);
        assertTrue(idleAt(2));
        List<ReferenceEngine.Call> loads = new ArrayList<>();
        for (ReferenceEngine.Call c : engine.calls("update_weights_from_disk")) {
            if (!c.json().path("files").isEmpty()) {
                loads.add(c); // the startup receiver probe sends no files
            }
        }
        assertEquals(2, loads.size(), loads.toString());
        for (int i = 0; i < 2; i++) {
            long v = i + 1;
            JsonNode body = loads.get(i).json();
            Path dir = boardRoot.resolve(String.format("versions/weight_v%06d", v));
            List<String> expectedFields = List.of("model_path", "files", "load_format", "weight_version", "flush_cache");
            List<String> fields = new ArrayList<>();
            body.fieldNames().forEachRemaining(fields::add);
            assertEquals(expectedFields, fields);
            assertEquals(dir.toString(), body.path("model_path").asText());
            assertEquals("delta", body.path("load_format").asText());
            assertEquals(Long.toString(v), body.path("weight_version").asText());
            assertEquals(false, body.path("flush_cache").asBoolean(true));
            JsonNode manifest = Http.JSON.readTree(Files.readAllBytes(dir.resolve("manifest.json")));
            assertEquals(manifest.path("transition_files"), body.path("files"));
        }
        assertEquals(TinyModel.digest(2), engine.weightsDigest());
        assertEquals("2", engine.weightVersion());

        // an unchanged checkpoint: a zero-file version is only relabelled
        engine.clearCalls();
        publish(3, 2);
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(idleAt(3));
        assertEquals(List.of(), engine.calls("update_weights_from_disk"));
        assertEquals("{\"new_version\":\"3\",\"abort_all_requests\":false}",
                engine.calls("update_weight_version").get(0).body());
    }

    @Test
    void runSwitchReloadsTheBaseThenAppliesTheNewRun() throws Exception {
        setUp(Duration.ZERO);
        publish(1, 1);
        publish(2, 2);
        startSidecar(CommitMode.IN_PLACE, 60);
        assertTrue(idleAt(2));
        assertEquals("run-a", sidecar.worker().status().currentRunId());
        engine.clearCalls();
        publisher.close();
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(boardRoot).runId("run-b").backends(DeltaFormat.SPARSE_DELTA)
                    .anchorInterval(0).threads(1).seed(seed).build();
        }
        publish(1, 5);
        Http.post(sidecar.port(), "/wake", "");
        assertTrue(eventually(20_000, () -> "run-b".equals(sidecar.worker().status().currentRunId())
                && sidecar.worker().status().currentVersion() == 1
                && sidecar.worker().status().state() == SyncState.IDLE));
        List<ReferenceEngine.Call> loads = engine.calls("update_weights_from_disk");
        assertEquals("{\"model_path\":" + Http.JSON.writeValueAsString(tmp.resolve("base").toString())
                + ",\"load_format\":\"auto\",\"weight_version\":\"0\",\"flush_cache\":false}", loads.get(0).body());
        assertEquals("1", loads.get(1).json().path("weight_version").asText());
        assertTrue(loads.get(1).json().path("model_path").asText().endsWith("weight_v000001"));
        assertEquals(TinyModel.digest(5), engine.weightsDigest());
        Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"x\", \"extra_key\": \"k\", "
                + "\"sampling_params\": {\"max_new_tokens\": 1}, \"weight_version\": {\"exact_version\": 1}}");
        assertEquals(200, r.status());
        assertEquals("run-b", r.header("x-stitch-run-id"));
        assertEquals(TinyModel.digest(5), r.json().path("meta_info").path("weights_digest").asText());
    }

    @Test
    void restartAdoptsTheSavedVersionWhenTheEngineStillServesIt() throws Exception {
        setUp(Duration.ZERO);
        Path state = tmp.resolve("state");
        publish(1, 1);
        startSidecar(CommitMode.QUIESCE, 60, state);
        assertTrue(idleAt(1));
        sidecar.close();
        engine.clearCalls();
        startSidecar(CommitMode.QUIESCE, 60, state);
        assertTrue(idleAt(1));
        assertEquals("run-a", sidecar.worker().status().currentRunId());
        assertTrue(engine.calls("update_weights_from_disk").stream()
                .allMatch(c -> c.json().path("files").isEmpty()), "only the receiver probe, no reload");
        assertEquals(200, Http.get(sidecar.port(), "/health").status());
    }

    @Test
    void drainTimeoutPreemptsAStuckRequest() throws Exception {
        setUp(Duration.ofMillis(50));
        publish(1, 1);
        startSidecar(CommitMode.QUIESCE, 0.3);
        assertTrue(idleAt(1));
        var stuck = Http.postAsync(sidecar.port(), "/generate", "{\"text\": \"a long one\", \"rid\": \"stuck-1\", "
                + "\"sampling_params\": {\"max_new_tokens\": 100000}}");
        assertTrue(eventually(5000, () -> sidecar.worker().status().activeRequests() == 1));
        publish(2, 2);
        long t0 = System.nanoTime();
        Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "{\"target_version\": 2}");
        Http.Reply r = stuck.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(503, r.status(), r.body());
        assertEquals("RequestPreempted", r.json().path("error").path("type").asText());
        assertTrue(idleAt(2));
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(10).toNanos());
        assertTrue(engine.calls("abort_request").stream().anyMatch(c -> c.body().contains("stuck-1")));
        assertEquals(1, sidecar.worker().status().lastMetrics().get("drain_preempted"));
        assertEquals(0, sidecar.worker().status().activeRequests());
    }

    @Test
    void inPlaceLetsNonExactRequestsCrossTheCommitButNeverExactPins() throws Exception {
        setUp(Duration.ofMillis(40));
        publish(1, 1);
        startSidecar(CommitMode.IN_PLACE, 60);
        assertTrue(idleAt(1));
        engine.clearCalls();
        // a non-exact request in flight does not block an in_place commit and finishes on the new weights
        var open = Http.postAsync(sidecar.port(), "/generate", "{\"text\": \"x\", "
                + "\"sampling_params\": {\"max_new_tokens\": 20}, \"weight_version\": {\"min_version\": 1}}");
        assertTrue(eventually(5000, () -> sidecar.worker().status().activeRequests() == 1));
        publish(2, 2);
        Http.post(sidecar.port(), "/wake", "");
        Http.Reply r = open.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, r.status(), r.body());
        assertTrue(idleAt(2));
        long start = Long.parseLong(r.header("x-stitch-weight-version-start"));
        long end = Long.parseLong(r.header("x-stitch-weight-version-end"));
        assertEquals(1, start);
        assertEquals(2, end);
        List<String> order = new ArrayList<>();
        for (ReferenceEngine.Call c : engine.calls()) {
            String route = c.route();
            if (route.equals("pause_generation") || route.equals("continue_generation")
                    || (route.equals("update_weights_from_disk") && !c.json().path("files").isEmpty())
                    || route.equals("flush_cache")) {
                order.add(route);
            }
        }
        assertEquals(List.of("pause_generation", "update_weights_from_disk", "continue_generation"), order);

        // an exact pin in flight holds the commit back until it is done
        var pinned = Http.postAsync(sidecar.port(), "/generate", "{\"text\": \"x\", "
                + "\"sampling_params\": {\"max_new_tokens\": 10}, \"weight_version\": {\"exact_version\": 2}}");
        assertTrue(eventually(5000, () -> sidecar.worker().status().activeRequests() == 1));
        publish(3, 3);
        Http.post(sidecar.port(), "/wake", "");
        Http.Reply p = pinned.get(20, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, p.status());
        assertEquals("2", p.header("x-stitch-weight-version-start"));
        assertEquals("2", p.header("x-stitch-weight-version-end"));
        assertEquals(TinyModel.digest(2), p.json().path("meta_info").path("weights_digest").asText());
        assertTrue(idleAt(3));
    }
}
