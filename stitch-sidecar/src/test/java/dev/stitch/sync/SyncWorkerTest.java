package dev.stitch.sync;

import static dev.stitch.sync.SyncFakes.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.apply.VersionStep;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SyncWorkerTest {

    private static final OptionalLong NONE = OptionalLong.empty();

    private final SyncFakes.MemoryBoard board = new SyncFakes.MemoryBoard();
    private final SyncFakes.RecordingEngine engine = new SyncFakes.RecordingEngine();
    private SyncWorker worker;

    /** Fast defaults: no polling unless asked, short backoff, short drains. */
    private static SyncConfig fast() {
        return SyncConfig.defaults().withPolling(0, 0).withBackoff(0.05, 0.2).withDrain(2, 1)
                .withLimits(2, 8, false, 5);
    }

    private SyncWorker start(SyncConfig config) {
        AdmissionGate gate = new AdmissionGate(config.bootRunId(), config.bootVersion());
        engine.gate = gate;
        worker = new SyncWorker(config, board, engine, gate);
        worker.start();
        return worker;
    }

    @AfterEach
    void stop() {
        if (worker != null) {
            worker.close();
        }
    }

    private boolean idleAt(long version) throws InterruptedException {
        return eventually(5000, () -> worker.status().state() == SyncState.IDLE
                && worker.status().currentVersion() == version && worker.status().ready());
    }

    private boolean inError() throws InterruptedException {
        return eventually(5000, () -> worker.status().state() == SyncState.ERROR);
    }

    @Test
    void startupComposesTailIntoOneCommit() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        board.publish(null, 2, 2, List.of("b"));
        start(fast());
        assertTrue(idleAt(2));
        assertEquals(List.of("stage:0->2", "flush", "commit:delta:0->2"), engine.engineCalls());
        SyncPlan plan = engine.commits.get(0);
        assertEquals(List.of(1L, 2L), plan.deltas().stream().map(VersionStep::version).toList());
        assertEquals(3, plan.transitionFileCount());
        SyncStatus s = worker.status();
        assertTrue(s.ready());
        assertNull(s.readyReason());
        assertNull(s.lastSyncError());
        assertEquals("open", s.admission());
        assertEquals(1, worker.metrics().commits(SyncPlan.Kind.DELTA));
    }

    @Test
    void brokenChainFailsWithoutTouchingTheEngine() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        board.publish(null, 2, 1, List.of("a"));
        board.versions.put(2L, SyncFakes.step(null, 2, 0, Path.of("/b"), List.of("x.safetensors"), List.of(), 10, 0));
        start(fast());
        assertTrue(inError());
        assertTrue(worker.status().lastSyncError().contains("base_version 0, expected 1"),
                worker.status().lastSyncError());
        assertEquals(List.of(), engine.engineCalls());
        assertFalse(worker.status().ready());
        assertEquals("initial_sync_incomplete", worker.status().readyReason());

        board.versions.remove(2L); // missing manifest in the tail
        Thread.sleep(300);
        assertEquals(SyncState.ERROR, worker.status().state());
        assertTrue(worker.status().lastSyncError().contains("version 2 has no manifest"),
                worker.status().lastSyncError());
        assertEquals(List.of(), engine.engineCalls());
    }

    @Test
    void wakeDuringCommitIsNotLost() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        engine.commitEntered = new CountDownLatch(1);
        engine.commitRelease = new CountDownLatch(1);
        start(fast());
        assertTrue(engine.commitEntered.await(5, TimeUnit.SECONDS));
        board.publish(null, 2, 1, List.of("a"));
        worker.wake(OptionalLong.of(2), false);
        engine.commitEntered = null;
        engine.commitRelease.countDown();
        engine.commitRelease = null;
        assertTrue(idleAt(2));
        assertEquals(List.of("stage:0->1", "flush", "commit:delta:0->1", "stage:1->2", "flush", "commit:delta:1->2"),
                engine.engineCalls());
    }

    @Test
    void runSwitchResetsThenAppliesTheNewRun() throws Exception {
        board.publish("run-a", 1, 1, List.of("a"));
        start(fast().withCommitMode(CommitMode.IN_PLACE));
        assertTrue(idleAt(1));
        assertEquals("run-a", worker.status().currentRunId(), "boot run adopted from the first pointer");
        engine.clear();
        Lease inflight = ((Admission.Admitted) worker.gate().admit(NONE, NONE, List.of()).join()).lease();
        board.versions.clear();
        board.publish("run-b", 1, 1, List.of("a"));
        worker.wake(NONE, true);
        // a reset drains everything, even in in_place mode
        Thread.sleep(200);
        assertEquals(AdmissionGate.State.CLOSED_ALL, worker.gate().state());
        assertEquals(1, inflight.release(), "served version unchanged while draining");
        assertTrue(eventually(5000, () -> "run-b".equals(worker.status().currentRunId())
                && worker.status().currentVersion() == 1 && worker.status().state() == SyncState.IDLE));
        assertEquals(List.of("stageReset", "flush", "reset", "stage:0->1", "pause:in_place",
                "commit:delta:0->1", "resume@1"), engine.engineCalls());
        assertEquals(1, worker.metrics().commits(SyncPlan.Kind.RESET));
    }

    @Test
    void runLessBoardNeverSwitches() throws Exception {
        board.publish(null, 1, 0, List.of());
        start(fast().withBoot(null, 0, null));
        assertTrue(idleAt(1));
        assertFalse(engine.engineCalls().contains("reset"));
        assertNull(worker.status().currentRunId());
    }

    @Test
    void inPlaceOrderFlipsBeforeResumeWithoutFlush() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        start(fast().withCommitMode(CommitMode.IN_PLACE));
        assertTrue(idleAt(1));
        assertEquals(List.of("stage:0->1", "pause:in_place", "commit:delta:0->1", "resume@1"), engine.engineCalls());
        Map<String, Object> m = worker.status().lastMetrics();
        for (String key : List.of("target_version", "stage_detail", "commit_detail", "board_refresh_s", "stage_s",
                "pause_s", "commit_s", "resume_s", "gate_s", "drain_wait_s", "skipped_noop_reload", "error",
                "recorded_at", "plan_kind", "tail_versions", "tail_transition_files", "artifact_verify_s")) {
            assertTrue(m.containsKey(key), key + " in " + m.keySet());
        }
        assertEquals(1L, m.get("target_version"));
        assertEquals(Map.of("staged", 1), m.get("stage_detail"));
        assertEquals(Map.of("reloads", 1), m.get("commit_detail"));
        assertTrue((Double) m.get("drain_wait_s") >= 0);
    }

    @Test
    void inPlaceFailureLeavesEngineUnknownUntilRecovered() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        start(fast().withCommitMode(CommitMode.IN_PLACE).withBackoff(0.3, 0.3));
        assertTrue(idleAt(1));
        engine.clear();
        engine.failCommits = 3; // first attempt + 2 retries
        board.publish(null, 2, 1, List.of("a"));
        worker.wake(NONE, true);
        assertTrue(inError());
        assertEquals(List.of("stage:1->2", "pause:in_place", "commit:delta:1->2", "commit:delta:1->2",
                "commit:delta:1->2", "pause:abort", "resume@1"), engine.engineCalls());
        SyncStatus s = worker.status();
        assertEquals(1, s.currentVersion());
        assertFalse(s.engineConsistent());
        assertFalse(s.ready());
        assertEquals("engine_state_unknown", s.readyReason());
        assertEquals("open", s.admission());
        assertEquals(2, s.lastMetrics().get("commit_retries_used"));
        Admission a = worker.gate().admit(NONE, NONE, List.of()).join();
        assertEquals(Admission.Reason.ENGINE_UNAVAILABLE, assertInstanceOf(Admission.Rejected.class, a).reason());
        // the backoff expires and the next pass reloads the base, then replays
        assertTrue(idleAt(2));
        assertTrue(worker.status().engineConsistent());
        assertTrue(worker.status().ready());
        assertInstanceOf(Admission.Admitted.class, worker.gate().admit(NONE, NONE, List.of()).join());
        List<String> calls = engine.engineCalls();
        assertTrue(calls.containsAll(List.of("reset", "commit:delta:0->2")), calls.toString());
    }

    @Test
    void inPlaceGatingAdmitsNonExactAtOldVersionAndRefusesOldPins() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        start(fast().withCommitMode(CommitMode.IN_PLACE));
        assertTrue(idleAt(1));
        Lease pin = ((Admission.Admitted) worker.gate().admit(OptionalLong.of(1), NONE, List.of("p")).join()).lease();
        engine.commitEntered = new CountDownLatch(1);
        engine.commitRelease = new CountDownLatch(1);
        board.publish(null, 2, 1, List.of("a"));
        worker.wake(NONE, true);
        Thread.sleep(200);
        assertFalse(engine.commitEntered.await(0, TimeUnit.MILLISECONDS), "an in-flight exact pin blocks the commit");
        pin.release();
        assertTrue(engine.commitEntered.await(5, TimeUnit.SECONDS));
        Lease plain = ((Admission.Admitted) worker.gate().admit(NONE, NONE, List.of()).join()).lease();
        CompletableFuture<Admission> exact = worker.gate().admit(OptionalLong.of(1), NONE, List.of());
        assertFalse(exact.isDone(), "exact pins wait during an in_place commit");
        engine.commitRelease.countDown();
        assertTrue(idleAt(2));
        assertEquals(1, plain.startVersion());
        assertEquals(2, plain.release());
        assertEquals(Admission.Reason.TOO_OLD,
                assertInstanceOf(Admission.Rejected.class, exact.get(5, TimeUnit.SECONDS)).reason());
    }

    @Test
    void drainTimeoutPreemptsByRid() throws Exception {
        start(fast().withDrain(0.2, 2));
        assertTrue(idleAt(0));
        Lease stuck = ((Admission.Admitted) worker.gate().admit(NONE, NONE, List.of("rid-9")).join()).lease();
        List<String> preempted = new ArrayList<>();
        stuck.onPreempt(() -> {
            preempted.add("503");
            stuck.release();
        });
        board.publish(null, 1, 1, List.of("a"));
        long t0 = System.nanoTime();
        worker.wake(NONE, true);
        assertTrue(idleAt(1));
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3));
        assertEquals(List.of("503"), preempted);
        assertTrue(engine.engineCalls().contains("abort:rid-9"));
        assertEquals(1, worker.status().lastMetrics().get("drain_preempted"));
        assertEquals(1, worker.metrics().preemptedRequests());
    }

    @Test
    void emptyTailOnlyRelabels() throws Exception {
        board.publish(null, 1, 0, List.of());
        board.publish(null, 2, 0, List.of());
        start(fast());
        assertTrue(idleAt(2));
        assertEquals(List.of("stage:0->2", "label:2"), engine.engineCalls());
        Map<String, Object> m = worker.status().lastMetrics();
        assertEquals(true, m.get("skipped_noop_reload"));
        assertEquals(0, m.get("tail_transition_files"));
        assertEquals("noop", m.get("plan_kind"));
        board.publish(null, 3, 1, List.of("a"));
        worker.wake(NONE, true);
        assertTrue(idleAt(3));
        assertEquals(List.of("stage:0->2", "label:2", "stage:2->3", "flush", "commit:delta:2->3"),
                engine.engineCalls());
        assertEquals(false, worker.status().lastMetrics().get("skipped_noop_reload"));
    }

    @Test
    void touchedNamesUnionReachesCommit() throws Exception {
        board.publish(null, 1, 1, List.of("a", "b"));
        board.publish(null, 2, 1, List.of("c", "a"));
        start(fast());
        assertTrue(idleAt(2));
        SyncPlan plan = engine.commits.get(0);
        assertTrue(plan.weightsKnown());
        assertEquals(java.util.Set.of("a", "b", "c"), plan.touchedWeights());
        assertEquals(List.of("a", "b", "c"), worker.status().lastMetrics().get("tail_weights"));

        board.publish(null, 3, 1, List.of());
        worker.wake(NONE, true);
        assertTrue(idleAt(3));
        assertFalse(engine.commits.get(1).weightsKnown());
        assertNull(worker.status().lastMetrics().get("tail_weights"));
    }

    @Test
    void hintAboveLatestCausesNoRefreshLoop() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        start(fast().withPolling(0.5, 0));
        assertTrue(idleAt(1));
        int before = board.pointerReads.get();
        long t0 = System.nanoTime();
        for (int i = 0; i < 200; i++) {
            worker.notReady(9);
            Thread.sleep(5);
        }
        double elapsed = (System.nanoTime() - t0) / 1e9;
        int reads = board.pointerReads.get() - before;
        // at most one read per poll interval, plus one for the first hint
        assertTrue(reads <= elapsed / 0.5 + 2, reads + " pointer reads in " + elapsed + " s");
        assertEquals(9, worker.status().wantedVersion());
        assertTrue(idleAt(1));
    }

    @Test
    void backoffSpacingAndResetOnSuccess() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        board.corrupt.add(1L);
        start(fast().withBackoff(0.2, 0.4));
        assertTrue(inError());
        List<Long> failures = new ArrayList<>();
        long last = worker.status().consecutiveErrors();
        long deadline = System.currentTimeMillis() + 2500;
        while (System.currentTimeMillis() < deadline && failures.size() < 4) {
            long n = worker.status().consecutiveErrors();
            if (n != last) {
                failures.add(System.nanoTime());
                last = n;
            }
            worker.notReady(1); // 409 storms start no pass while backing off
            Thread.sleep(2);
        }
        assertTrue(failures.size() >= 3, "failures seen: " + failures.size());
        for (int i = 1; i < failures.size(); i++) {
            double gap = (failures.get(i) - failures.get(i - 1)) / 1e9;
            // d = min(0.4, 0.2 * 2^(n-1)) scaled into [0.5d, d]; n >= 2 here so d is 0.4
            assertTrue(gap >= 0.18 && gap <= 0.6, "gap " + gap);
        }
        assertTrue(worker.status().nextRetryAt() != null);
        assertEquals(1, worker.metrics().artifactVerifyFailures() >= 1 ? 1 : 0);
        assertEquals(List.of(), engine.engineCalls(), "a verification failure never touches the engine");

        // a changed pointer retries at once
        board.corrupt.clear();
        board.publish(null, 2, 1, List.of("a"));
        long t0 = System.nanoTime();
        worker.wake(NONE, true);
        assertTrue(idleAt(2));
        assertTrue(System.nanoTime() - t0 < TimeUnit.MILLISECONDS.toNanos(300));
        assertEquals(0, worker.status().consecutiveErrors());
        assertNull(worker.status().nextRetryAt());
    }

    @Test
    void pollPicksUpLostWakeAndZeroDisablesIt() throws Exception {
        start(fast().withPolling(0.1, 0));
        assertTrue(idleAt(0));
        board.publish(null, 1, 1, List.of("a"));
        assertTrue(idleAt(1), "poll found the publish");
        worker.close();

        SyncFakes.MemoryBoard quiet = new SyncFakes.MemoryBoard();
        AdmissionGate gate = new AdmissionGate(null, 0);
        worker = new SyncWorker(fast().withPolling(0, 0), quiet, engine, gate);
        worker.start();
        assertTrue(idleAt(0));
        quiet.publish(null, 1, 1, List.of("a"));
        Thread.sleep(400);
        assertEquals(0, worker.status().currentVersion(), "no poll, no wake: nothing happens");
    }

    @Test
    void blockedBoardNeverBlocksTheRequestPath() throws Exception {
        start(fast());
        assertTrue(idleAt(0));
        board.block = new CountDownLatch(1);
        board.publish(null, 1, 1, List.of("a"));
        worker.wake(NONE, true);
        Thread.sleep(100);
        long t0 = System.nanoTime();
        for (int i = 0; i < 100; i++) {
            worker.notReady(1);
            worker.status();
            Admission a = worker.gate().admit(OptionalLong.of(1), NONE, List.of()).get(1, TimeUnit.SECONDS);
            assertEquals(Admission.Reason.NOT_READY, ((Admission.Rejected) a).reason());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(1));
        board.block.countDown();
        board.block = null;
        assertTrue(idleAt(1));
    }

    @Test
    void anchorsCutColdStartsAndReplaysWhenCheaper() throws Exception {
        for (long v = 1; v <= 23; v++) {
            if (v == 10 || v == 20) {
                board.publishAnchor(null, v, 10_000);
            } else {
                board.publish(null, v, 1, List.of("a"));
            }
        }
        start(fast());
        assertTrue(idleAt(23));
        SyncPlan cold = engine.commits.get(0);
        assertEquals(SyncPlan.Kind.ANCHOR, cold.kind());
        assertEquals(20, cold.anchor().orElseThrow().version());
        assertEquals(List.of(21L, 22L, 23L), cold.deltas().stream().map(VersionStep::version).toList());
        assertEquals(20L, worker.status().lastMetrics().get("anchor_version"));
        worker.close();

        // a replica at 19 replays 20..23 (4 small deltas are cheaper than the anchor)
        engine.clear();
        AdmissionGate gate = new AdmissionGate(null, 19);
        worker = new SyncWorker(fast().withBoot(null, 19, null), board, engine, gate);
        worker.start();
        assertTrue(idleAt(23));
        SyncPlan warm = engine.commits.get(0);
        assertEquals(SyncPlan.Kind.DELTA, warm.kind());
        assertEquals(List.of(20L, 21L, 22L, 23L), warm.deltas().stream().map(VersionStep::version).toList());
        worker.close();

        // GC'd deltas below the anchor force the anchor path
        engine.clear();
        board.versions.remove(19L);
        gate = new AdmissionGate(null, 17);
        worker = new SyncWorker(fast().withBoot(null, 17, null), board, engine, gate);
        worker.start();
        assertTrue(idleAt(23));
        assertEquals(SyncPlan.Kind.ANCHOR, engine.commits.get(0).kind());
    }

    @Test
    void pointerRewindTouchesNothing() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        board.publish(null, 2, 1, List.of("a"));
        start(fast());
        assertTrue(idleAt(2));
        engine.clear();
        board.pointer = new SyncBoard.Pointer(null, 1);
        worker.wake(NONE, true);
        assertTrue(inError());
        assertTrue(worker.status().lastSyncError().startsWith("pointer_rewind"), worker.status().lastSyncError());
        assertEquals(List.of(), engine.engineCalls());
        assertEquals(2, worker.status().currentVersion());
        assertInstanceOf(Admission.Admitted.class, worker.gate().admit(OptionalLong.of(2), NONE, List.of()).join());
    }

    @Test
    void corruptArtifactRecoversThroughALaterAnchor() throws Exception {
        board.publish(null, 1, 1, List.of("a"));
        start(fast().withBackoff(0.1, 0.2));
        assertTrue(idleAt(1));
        engine.clear();
        board.publish(null, 2, 1, List.of("a"));
        board.corrupt.add(2L);
        worker.wake(NONE, true);
        assertTrue(inError());
        assertTrue(worker.status().lastSyncError().contains("failed verification"), worker.status().lastSyncError());
        assertEquals(1, worker.status().currentVersion());
        assertEquals(List.of(), engine.engineCalls());
        board.publishAnchor(null, 3, 10_000);
        worker.wake(NONE, true);
        assertTrue(idleAt(3));
        assertEquals(SyncPlan.Kind.ANCHOR, engine.commits.get(0).kind());
        assertNull(worker.status().lastSyncError());
    }

    @Test
    void restartAdoptsSavedStateOnlyWhenTheEngineAgrees(@TempDir Path dir) throws Exception {
        board.publish("run-a", 1, 1, List.of("a"));
        board.publish("run-a", 2, 1, List.of("a"));
        start(fast().withBoot(null, 0, dir));
        assertTrue(idleAt(2));
        assertTrue(Files.readString(dir.resolve(SidecarStateFile.FILE_NAME)).contains("\"version\":2"));
        worker.close();

        engine.clear();
        engine.label = Optional.of("2");
        worker = new SyncWorker(fast().withBoot(null, 0, dir), board, engine, new AdmissionGate(null, 0));
        worker.start();
        assertTrue(idleAt(2));
        assertEquals("run-a", worker.status().currentRunId());
        assertEquals(List.of(), engine.engineCalls(), "adopted: nothing to apply");
        worker.close();

        engine.clear();
        engine.label = Optional.of("default");
        worker = new SyncWorker(fast().withBoot(null, 0, dir), board, engine, new AdmissionGate(null, 0));
        worker.start();
        assertTrue(idleAt(2));
        assertEquals(List.of("stage:0->2", "flush", "commit:delta:0->2"), engine.engineCalls());
    }

    @Test
    void engineThatNeverComesUpFailsTheStartupPass() throws Exception {
        engine.healthy = () -> false;
        start(fast().withLimits(2, 8, false, 0.3));
        assertTrue(inError());
        assertTrue(worker.status().lastSyncError().contains("/health"), worker.status().lastSyncError());
        engine.healthy = () -> true;
        assertTrue(idleAt(0));
        assertNotNull(worker.status());
    }
}
