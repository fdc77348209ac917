package dev.stitch.sync;

import static dev.stitch.sync.SyncFakes.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardOptions;
import dev.stitch.board.BoardRepair;
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

/** The sync worker on a board with a version linked out of it (docs/protocol/board.md §1.6): refused, never wedged. */
class HostileBoardSyncTest {

    @TempDir
    Path tmp;

    private final SyncFakes.RecordingEngine engine = new SyncFakes.RecordingEngine();
    private SyncWorker worker;

    @AfterEach
    void stop() {
        if (worker != null) {
            worker.close();
        }
    }

    private static void publish(FilesystemBulletinBoard board, long v, boolean anchor) throws Exception {
        try (VersionPublication p = board.beginPublish("run-a", v)) {
            p.writeArtifact("rank0000_flush000000.safetensors", ArtifactKind.TRANSITION,
                    out -> out.write(("delta-" + v).getBytes(StandardCharsets.UTF_8)));
            if (anchor) {
                p.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[4096]));
            }
            p.commit(ManifestFields.of("sparse_delta", "delta").withTransitionWeights(List.of("w" + v)));
        }
    }

    private void start(FilesystemBulletinBoard board) {
        AdmissionGate gate = new AdmissionGate(null, 0);
        engine.gate = gate;
        worker = new SyncWorker(SyncConfig.defaults().withPolling(0, 0).withBackoff(0.05, 0.1),
                new BulletinBoardSource(board), engine, gate);
        worker.start();
    }

    private boolean idleAt(long v) throws InterruptedException {
        return eventually(5000, () -> worker.status().state() == SyncState.IDLE && worker.status().currentVersion() == v);
    }

    private void linkOut(Path dir) throws Exception {
        Path outside = tmp.resolve("outside-" + dir.getFileName());
        Files.move(dir, outside);
        Files.createSymbolicLink(dir, outside);
    }

    @Test
    void aLinkedVersionBelowAnAnchorIsSkippedThroughTheAnchor() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", BoardOptions.defaults());
        publish(board, 1, false);
        start(board);
        assertTrue(idleAt(1));
        engine.clear();
        publish(board, 2, false);
        publish(board, 3, true);
        linkOut(board.versionDirectory(2));
        worker.wake(OptionalLong.empty(), true);
        assertTrue(idleAt(3), () -> "state " + worker.status().state() + ": " + worker.status().lastSyncError());
        SyncPlan plan = engine.commits.get(0);
        assertEquals(SyncPlan.Kind.ANCHOR, plan.kind());
        assertEquals(3, plan.anchor().orElseThrow().version());
    }

    @Test
    void aLinkedLatestVersionKeepsTheCurrentOneServedUntilRepaired() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", BoardOptions.defaults());
        publish(board, 1, false);
        start(board);
        assertTrue(idleAt(1));
        engine.clear();
        publish(board, 2, false);
        linkOut(board.versionDirectory(2));
        worker.wake(OptionalLong.empty(), true);
        assertTrue(eventually(5000, () -> worker.status().state() == SyncState.ERROR));
        assertTrue(worker.status().lastSyncError().contains("symbolic link"), worker.status().lastSyncError());
        assertEquals(1, worker.status().currentVersion());
        assertEquals(List.of(), engine.engineCalls());

        assertTrue(BoardRepair.repair(board, false).changed());
        publish(board, 3, true);
        worker.wake(OptionalLong.empty(), true);
        assertTrue(idleAt(3), () -> "state " + worker.status().state() + ": " + worker.status().lastSyncError());
        assertEquals(SyncPlan.Kind.ANCHOR, engine.commits.get(0).kind());
    }
}
