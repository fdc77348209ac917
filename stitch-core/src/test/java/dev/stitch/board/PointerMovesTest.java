package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.stitch.protocol.LatestPointer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pointer-move rule (2.2, 3): the table, and random operation sequences against a simple model. */
class PointerMovesTest {
    @TempDir
    Path tmp;

    @Test
    void table() throws IOException {
        assertEquals(PointerMoves.Outcome.RESET, PointerMoves.claim(null, 0, "a"));
        assertEquals(PointerMoves.Outcome.RESET, PointerMoves.claim("a", 5, "b"));
        assertEquals(PointerMoves.Outcome.RESET, PointerMoves.claim("a", 5, null));
        assertEquals(PointerMoves.Outcome.UNCHANGED, PointerMoves.claim("a", 0, "a"));
        assertThrows(PointerRewindException.class, () -> PointerMoves.claim("a", 1, "a"));
        assertEquals(PointerMoves.Outcome.CLAIM_THEN_ADVANCE, PointerMoves.publish("a", 4, "b", 1));
        assertEquals(PointerMoves.Outcome.CLAIM_THEN_ADVANCE, PointerMoves.publish(null, 4, "b", 1));
        assertEquals(PointerMoves.Outcome.CLAIM_THEN_ADVANCE, PointerMoves.publish("a", 4, null, 1));
        assertThrows(PointerConflictException.class, () -> PointerMoves.publish("a", 4, "b", 2));
        assertThrows(PointerConflictException.class, () -> PointerMoves.publish("a", 0, "b", 5));
        PointerRewindException e = assertThrows(PointerRewindException.class, () -> PointerMoves.publish("run-a", 5, "run-a", 3));
        assertEquals("latest is at version 5 (run 'run-a'); refusing to rewind to 3", e.getMessage());
        assertThrows(PointerRewindException.class, () -> PointerMoves.publish(null, 5, null, 5));
        assertThrows(PointerSkipException.class, () -> PointerMoves.publish(null, 5, null, 7));
        assertEquals(PointerMoves.Outcome.ADVANCE, PointerMoves.publish(null, 5, null, 6));
        assertEquals(PointerMoves.Outcome.ADVANCE, PointerMoves.publish("a", 0, "a", 1));
        assertThrows(IllegalArgumentException.class, () -> PointerMoves.publish("a", 0, "a", 0));
        // foreign layouts: different run resets at any version, gaps allowed, no rewind
        assertEquals(PointerMoves.Outcome.RESET, PointerMoves.foreign("a", 9, "b", 7));
        assertEquals(PointerMoves.Outcome.ADVANCE, PointerMoves.foreign("a", 2, "a", 9));
        assertThrows(PointerRewindException.class, () -> PointerMoves.foreign("a", 2, "a", 2));
        assertThrows(PointerRewindException.class, () -> PointerMoves.foreign(null, 2, null, 1));
        assertThrows(IllegalArgumentException.class, () -> PointerMoves.checkWritableRunId(""));
        assertThrows(IllegalArgumentException.class, () -> PointerMoves.checkWritableRunId("-a"));
        assertThrows(IllegalArgumentException.class, () -> PointerMoves.checkWritableRunId("a".repeat(129)));
        PointerMoves.checkWritableRunId("a".repeat(128));
        PointerMoves.checkWritableRunId("Run_1.2-x");
        PointerMoves.checkWritableRunId(null);
    }

    /** Random claims and publishes against a model pointer: every accepted move matches the model, every refusal too. */
    @Test
    void randomSequencesAgainstAModel() throws IOException {
        String[] runs = {null, "a", "b"};
        SplittableRandom r = new SplittableRandom(7);
        for (int seq = 0; seq < 300; seq++) {
            String run = null;
            long v = 0;
            for (int step = 0; step < 40; step++) {
                String runP = runs[r.nextInt(runs.length)];
                boolean claim = runP != null && r.nextInt(5) == 0;
                if (claim) {
                    boolean ok = !Objects.equals(run, runP) || v == 0;
                    try {
                        PointerMoves.claim(run, v, runP);
                        assertTrue(ok);
                        run = runP;
                        v = 0;
                    } catch (PointerRewindException e) {
                        assertTrue(!ok, "refused a valid claim");
                    }
                    continue;
                }
                long vP = Math.max(1, v + r.nextInt(-2, 3));
                if (r.nextInt(4) == 0) {
                    vP = 1;
                }
                try {
                    PointerMoves.Outcome o = PointerMoves.publish(run, v, runP, vP);
                    if (Objects.equals(run, runP)) {
                        assertEquals(v + 1, vP, "same run advances by exactly one");
                        assertEquals(PointerMoves.Outcome.ADVANCE, o);
                    } else {
                        assertEquals(1, vP, "a new run starts at 1");
                        assertEquals(PointerMoves.Outcome.CLAIM_THEN_ADVANCE, o);
                    }
                    run = runP;
                    v = vP;
                } catch (PointerRewindException e) {
                    assertTrue(Objects.equals(run, runP) && vP <= v);
                } catch (PointerSkipException e) {
                    assertTrue(Objects.equals(run, runP) && vP > v + 1);
                } catch (PointerConflictException e) {
                    assertTrue(!Objects.equals(run, runP) && vP > 1);
                } catch (PointerMoveException e) {
                    fail(e);
                }
            }
        }
    }

    /** The same random sequences through a real board: the pointer always equals the model's. */
    @Test
    void randomSequencesThroughABoard() throws IOException {
        String[] runs = {null, "a", "b"};
        SplittableRandom r = new SplittableRandom(11);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults());
        String run = null;
        long v = 0;
        for (int step = 0; step < 60; step++) {
            String runP = runs[r.nextInt(runs.length)];
            long vP = Math.max(1, v + r.nextInt(-1, 3));
            if (r.nextInt(4) == 0) {
                vP = 1;
            }
            boolean accept = Objects.equals(run, runP) ? vP == v + 1 : vP == 1;
            try {
                FilesystemBulletinBoardTest.publish(board, runP, vP, "s" + step);
                assertTrue(accept, "accepted " + runP + "/" + vP + " over " + run + "/" + v);
                run = runP;
                v = vP;
            } catch (PointerMoveException e) {
                assertTrue(!accept, "refused " + runP + "/" + vP + " over " + run + "/" + v + ": " + e.getMessage());
            }
            LatestPointer p = board.readLatest();
            assertEquals(run, p.runId());
            assertEquals(v, p.version());
            if (v > 0) {
                assertEquals(runP == null && !accept ? p.runId() : run, board.readManifest(v).runId());
                board.verifyArtifacts(board.readManifest(v), true);
            }
        }
    }
}
