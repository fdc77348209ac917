package dev.stitch.sync;

import static dev.stitch.sync.SyncFakes.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.apply.VersionStep;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.protocol.ArtifactKind;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sync worker over a real stitch-layout board in a temporary directory. */
class BulletinBoardSyncTest {

    @TempDir
    Path root;

    private final SyncFakes.RecordingEngine engine = new SyncFakes.RecordingEngine();
    private SyncWorker worker;

    @AfterEach
    void stop() {
        if (worker != null) {
            worker.close();
        }
    }

    private void publish(FilesystemBulletinBoard board, String run, long v, boolean anchor) throws Exception {
        try (VersionPublication p = board.beginPublish(run, v)) {
            p.writeArtifact("rank0000_flush000000.safetensors", ArtifactKind.TRANSITION,
                    out -> out.write(("delta-" + v).getBytes(StandardCharsets.UTF_8)));
            if (anchor) {
                p.writeArtifact("full/model.safetensors", ArtifactKind.FULL,
                        out -> out.write(new byte[4096]));
            }
            p.commit(ManifestFields.of("sparse_delta", "delta").withTransitionWeights(List.of("w" + v)));
        }
    }

    private SyncWorker start(FilesystemBulletinBoard board) {
        AdmissionGate gate = new AdmissionGate(null, 0);
        engine.gate = gate;
        worker = new SyncWorker(SyncConfig.defaults().withPolling(0, 0).withBackoff(0.05, 0.1),
                new BulletinBoardSource(board), engine, gate);
        worker.start();
        return worker;
    }

    private boolean idleAt(long v) throws InterruptedException {
        return eventually(5000, () -> worker.status().state() == SyncState.IDLE
                && worker.status().currentVersion() == v);
    }

    @Test
    void appliesVerifiedChainFromARealBoard() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(root, "run-a", BoardOptions.defaults());
        publish(board, "run-a", 1, false);
        publish(board, "run-a", 2, false);
        start(board);
        assertTrue(idleAt(2));
        SyncPlan plan = engine.commits.get(0);
        assertEquals(List.of(1L, 2L), plan.deltas().stream().map(VersionStep::version).toList());
        assertEquals(root.resolve("versions/weight_v000002"), plan.deltas().get(1).directory());
        assertEquals(List.of("rank0000_flush000000.safetensors"), plan.deltas().get(1).transitionFiles());
        assertEquals(java.util.Set.of("w1", "w2"), plan.touchedWeights());
        assertEquals("run-a", worker.status().currentRunId());
        assertEquals(14L, worker.status().lastMetrics().get("artifact_bytes_verified"));
    }

    @Test
    void corruptArtifactIsRefusedUntilAnAnchorArrives() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(root, "run-a", BoardOptions.defaults());
        publish(board, "run-a", 1, false);
        start(board);
        assertTrue(idleAt(1));
        engine.clear();
        publish(board, "run-a", 2, false);
        Files.writeString(root.resolve("versions/weight_v000002/rank0000_flush000000.safetensors"), "evil-2");
        worker.wake(OptionalLong.empty(), true);
        assertTrue(eventually(5000, () -> worker.status().state() == SyncState.ERROR));
        String error = worker.status().lastSyncError();
        assertTrue(error.contains("version 2 failed verification"), error);
        assertEquals(1, worker.status().currentVersion());
        assertEquals(List.of(), engine.engineCalls());
        assertTrue(worker.metrics().artifactVerifyFailures() >= 1);

        publish(board, "run-a", 3, true);
        worker.wake(OptionalLong.empty(), true);
        assertTrue(idleAt(3));
        SyncPlan plan = engine.commits.get(0);
        assertEquals(SyncPlan.Kind.ANCHOR, plan.kind());
        assertEquals(3, plan.anchor().orElseThrow().version());
    }
}
