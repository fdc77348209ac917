package dev.stitch.publish;

import static dev.stitch.publish.PublisherFixtures.bytes;
import static dev.stitch.publish.PublisherFixtures.copyDir;
import static dev.stitch.publish.PublisherFixtures.model;
import static dev.stitch.publish.PublisherFixtures.readCheckpoint;
import static dev.stitch.publish.PublisherFixtures.step;
import static dev.stitch.publish.PublisherFixtures.writeCheckpoint;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.BoardTail;
import dev.stitch.apply.ChainPlan;
import dev.stitch.apply.ChainPlanner;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.encode.TensorData;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The anchor policy by bytes (docs/protocol/board.md §2.6): a version also carries a full checkpoint once the
 * transition bytes since the newest anchor would pass a fraction of that anchor's size, so a late joiner's
 * download (newest anchor + tail) stays within {@code 1 + F} anchors, also across publisher restarts, combined
 * with the interval rule, and with gc keeping every version such a joiner needs.
 */
class AnchorBytesTest {

    private static final double FRACTION = 0.2;
    private static final int VERSIONS = 14;
    private static final double DENSITY = 0.06;

    @TempDir
    Path tmp;

    /** The weights of versions 0..VERSIONS, each a small step from the one before. */
    private static List<List<TensorData>> trajectory() {
        List<List<TensorData>> out = new ArrayList<>();
        out.add(model(21));
        for (int v = 1; v <= VERSIONS; v++) {
            out.add(step(out.getLast(), DENSITY, 200 + v));
        }
        return out;
    }

    private static WeightPublisher.Builder publisher(FilesystemBulletinBoard board, List<TensorData> seed) {
        return WeightPublisher.builder().board(board).runId("run-b").anchorInterval(0).anchorBytesFraction(FRACTION)
                .threads(1).seed(Weights.of(seed));
    }

    @Test
    void aJoinersDownloadStaysWithinOnePlusTheFractionOfAnAnchor() throws Exception {
        List<List<TensorData>> w = trajectory();
        long modelBytes = Weights.of(w.getFirst()).byteSize();
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        List<Long> anchors = new ArrayList<>();
        try (WeightPublisher p = publisher(board, w.getFirst()).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                PublishResult r = p.publish(v, Weights.of(w.get(v)));
                assertEquals(r.anchor(), board.readManifest(v).isAnchor());
                if (r.anchor()) {
                    anchors.add((long) v);
                }
                long[] joiner = joinerBytes(board, v);
                long anchorSize = joiner[0] > 0 ? joiner[0] : modelBytes;
                assertTrue(joiner[1] <= FRACTION * anchorSize, "version " + v + ": a joiner replays " + joiner[1]
                        + " bytes after an anchor of " + anchorSize);
            }
        }
        assertTrue(anchors.size() >= 2, "the byte rule made anchors: " + anchors);
        assertTrue(anchors.size() <= VERSIONS / 2, "small steps are mostly deltas: " + anchors);
    }

    @Test
    void aPublisherRestartedForEveryVersionPlacesTheSameAnchorsAsOneThatRanThroughout() throws Exception {
        List<List<TensorData>> w = trajectory();
        FilesystemBulletinBoard continuous = FilesystemBulletinBoard.open(tmp.resolve("continuous"));
        List<Boolean> expected = new ArrayList<>();
        try (WeightPublisher p = publisher(continuous, w.getFirst()).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                expected.add(p.publish(v, Weights.of(w.get(v))).anchor());
            }
        }
        FilesystemBulletinBoard restarted = FilesystemBulletinBoard.open(tmp.resolve("restarted"));
        List<Boolean> actual = new ArrayList<>();
        for (int v = 1; v <= VERSIONS; v++) {
            // a new trainer process: it knows nothing but the board and the weights it resumes from
            try (WeightPublisher p = publisher(restarted, w.get(v - 1)).build()) {
                actual.add(p.publish(v, Weights.of(w.get(v))).anchor());
            }
        }
        assertTrue(expected.contains(true) && expected.contains(false), "both kinds of version occur: " + expected);
        assertEquals(expected, actual, "the bytes since the anchor were read back from the board");
    }

    @Test
    void theIntervalAndTheByteRuleCombineWhicheverComesFirst() throws Exception {
        List<List<TensorData>> w = trajectory();
        List<Boolean> byBytes = new ArrayList<>();
        try (WeightPublisher p = publisher(FilesystemBulletinBoard.open(tmp.resolve("bytes")), w.getFirst()).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                byBytes.add(p.publish(v, Weights.of(w.get(v))).anchor());
            }
        }
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("both"));
        try (WeightPublisher p = publisher(board, w.getFirst()).anchorInterval(5).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                boolean anchor = p.publish(v, Weights.of(w.get(v))).anchor();
                if (v % 5 == 0) {
                    assertTrue(anchor, "version " + v + " is an anchor by the interval");
                } else if (v < 5) {
                    assertEquals(byBytes.get(v - 1), anchor, "before the first interval anchor the byte rule alone decides");
                }
                long[] joiner = joinerBytes(board, v);
                assertTrue(joiner[0] == 0 || joiner[1] <= FRACTION * joiner[0], "version " + v);
            }
        }
        try (WeightPublisher p = WeightPublisher.builder().board(tmp.resolve("off")).anchorInterval(0).threads(1)
                .seed(Weights.of(w.getFirst())).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                assertFalse(p.publish(v, Weights.of(w.get(v))).anchor(), "both rules off: no anchors");
            }
        }
    }

    @Test
    void gcAfterEachPublishNeverDeletesWhatAJoinerNeeds() throws Exception {
        List<List<TensorData>> w = trajectory();
        Path base = writeCheckpoint(tmp.resolve("base"), w.getFirst());
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        long newestAnchor = 0;
        try (WeightPublisher p = publisher(board, w.getFirst()).keepLast(1).gcMinAgeSeconds(0).build()) {
            for (int v = 1; v <= VERSIONS; v++) {
                if (p.publish(v, Weights.of(w.get(v))).anchor()) {
                    newestAnchor = v;
                }
                for (long gone = 1; gone < newestAnchor; gone++) {
                    assertFalse(Files.exists(board.versionDirectory(gone)), "gc removed version " + gone);
                }
                // A replica joining now from the base checkpoint plans, verifies and applies its way to v.
                ChainPlanner planner = new ChainPlanner(8);
                ChainPlanner.Copy copy = ChainPlanner.Copy.clean("run-b", 0);
                BoardTail tail = BoardTail.read(planner, copy, "run-b", v,
                        x -> VersionStep.of(board.readManifest(x), board.versionDirectory(x)));
                ChainPlan.Chain chain = assertInstanceOf(ChainPlan.Chain.class, planner.plan(copy, "run-b", tail),
                        "version " + v);
                for (VersionStep s : chain.steps()) {
                    board.verifyArtifacts(board.readManifest(s.version()), true);
                }
                Path local = copyDir(base, tmp.resolve("joiner-" + v));
                try (HostApplier applier = HostApplier.open(local)) {
                    applier.apply(chain.steps(), ApplyProgress.NONE);
                }
                Map<String, byte[]> expected = bytes(w.get(v));
                Map<String, byte[]> applied = readCheckpoint(local);
                for (String name : expected.keySet()) {
                    assertArrayEquals(expected.get(name), applied.get(name), "version " + v + ": " + name);
                }
            }
        }
        assertTrue(newestAnchor > 1, "an anchor let gc delete something");
    }

    @Test
    void theFractionMustBeAFiniteNonNegativeNumber() {
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().anchorBytesFraction(-0.1));
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().anchorBytesFraction(Double.NaN));
        assertThrows(IllegalArgumentException.class,
                () -> WeightPublisher.builder().anchorBytesFraction(Double.POSITIVE_INFINITY));
    }

    /**
     * What a replica joining at {@code latest} without the base downloads: {@code [full bytes of the newest
     * anchor (0 when there is none), transition bytes of the versions after it]}.
     */
    private static long[] joinerBytes(FilesystemBulletinBoard board, long latest) throws Exception {
        long tail = 0;
        for (long v = latest; v >= 1; v--) {
            VersionStep s = VersionStep.of(board.readManifest(v), board.versionDirectory(v));
            if (s.hasFull()) {
                return new long[] {s.fullBytes(), tail};
            }
            tail += s.transitionBytes();
        }
        return new long[] {0, tail};
    }
}
