package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/conformance.md case 13: a publisher process killed with SIGKILL at random points never leaves the pointer
 * on a version that fails verification, and never leaves anything that blocks the next publish.
 */
class CrashSafetyTest {
    private static final int TRIALS = 50;
    private static final int LANES = 2;

    @TempDir
    Path tmp;

    @Test
    void killedPublishersNeverCorruptTheBoard() throws Exception {
        // A child that publishes one version and exits normally: the harness itself works.
        Path warmBoard = tmp.resolve("warm");
        FilesystemBulletinBoard.create(warmBoard, "crash", BoardOptions.defaults());
        ChildJvm.finish(ChildJvm.start(CrashingPublisher.class, warmBoard.toString(), "once"));
        assertEquals(1, FilesystemBulletinBoard.open(warmBoard).readLatest().version());
        // Two independent boards, killed in parallel lanes, halve the wall time on a two-core machine.
        ExecutorService lanes = Executors.newFixedThreadPool(LANES);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int lane = 0; lane < LANES; lane++) {
                Path root = tmp.resolve("board-" + lane);
                long seed = 2026 + lane;
                results.add(lanes.submit(() -> runTrials(root, TRIALS / LANES, new SplittableRandom(seed))));
            }
            int progressed = 0;
            for (Future<Integer> f : results) {
                progressed += f.get(10, TimeUnit.MINUTES);
            }
            assertTrue(progressed > 0, "some trials were killed after publishing at least one version");
        } finally {
            lanes.shutdownNow();
        }
    }

    private static int runTrials(Path root, int trials, SplittableRandom random) throws Exception {
        FilesystemBulletinBoard.create(root, "crash", BoardOptions.defaults());
        int progressed = 0;
        for (int trial = 0; trial < trials; trial++) {
            Process child = ChildJvm.start(CrashingPublisher.class, root.toString(), "forever");
            try {
                BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
                String ready = out.readLine();
                StringBuilder early = new StringBuilder();
                while (ready != null && !ready.equals("ready")) {
                    early.append(ready).append('\n'); // e.g. logging warnings before the child is ready
                    ready = out.readLine();
                }
                assertEquals("ready", ready, "child failed to start: " + early);
                // Kill anywhere in the first few publishes: inside artifacts, manifest, rename or pointer write.
                TimeUnit.MICROSECONDS.sleep(random.nextLong(0, 60_000));
            } finally {
                child.destroyForcibly();
                assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            }

            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
            LatestPointer p = board.readLatest(); // never a read error
            for (long v = Math.max(1, p.version() - 3); v <= p.version(); v++) {
                Manifest m = board.readManifest(v, p);
                assertEquals(v - 1, m.baseVersion());
                board.verifyArtifacts(m, true);
            }
            // the next publish succeeds without manual cleanup (dead-owner lock broken, orphan moved aside)
            Manifest next = FilesystemBulletinBoardTest.publish(board, "crash", p.version() + 1, "after trial " + trial);
            assertEquals(p.version() + 1, board.readLatest().version());
            board.verifyArtifacts(next, true);
            if (p.version() > 0) {
                progressed++;
            }
        }
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
        LatestPointer p = board.readLatest();
        for (long v = 1; v <= p.version(); v++) {
            board.verifyArtifacts(board.readManifest(v, p), true);
        }
        // leftovers of killed publishers are visible, and removable without touching published versions
        for (String left : board.leftovers()) {
            assertTrue(left.endsWith(".staging") || left.endsWith(".orphan") || left.endsWith(".tmp")
                    || left.contains(".stitch.lock.stale-") || left.startsWith("versions/weight_v"), left);
        }
        board.discardOrphan(p.version() + 1);
        return progressed;
    }

    /** Child main: publishes versions in a loop until killed. */
    public static final class CrashingPublisher {
        public static void main(String[] args) throws IOException {
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(Path.of(args[0]));
            // warm up the classes used below so the kill lands in publishing, not class loading
            LatestPointer p = board.readLatest();
            System.out.println("ready");
            System.out.flush();
            byte[] payload = new byte[256 * 1024];
            boolean once = args.length > 1 && args[1].equals("once");
            do {
                p = board.readLatest();
                long v = p.version() + 1;
                try (VersionPublication pub = board.beginPublish(p.runId(), v)) {
                    for (int i = 0; i < 3; i++) {
                        payload[i] = (byte) v;
                        pub.writeArtifact("delta-0000" + i + ".stdelta", ArtifactKind.TRANSITION, out -> out.write(payload));
                    }
                    if (v % 3 == 0) {
                        pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(payload));
                    }
                    pub.commit(ManifestFields.of("stitch_delta", "auto"));
                }
            } while (!once);
        }
    }
}
