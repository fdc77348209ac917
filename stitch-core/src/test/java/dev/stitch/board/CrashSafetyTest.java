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
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Conformance 13: a publisher process killed with SIGKILL at random points never leaves the pointer
 * on a version that fails verification, and never leaves anything that blocks the next publish.
 */
class CrashSafetyTest {
    private static final int TRIALS = 50;

    @TempDir
    Path tmp;

    @Test
    void killedPublishersNeverCorruptTheBoard() throws Exception {
        FilesystemBulletinBoard.create(tmp, "crash", BoardOptions.defaults());
        SplittableRandom random = new SplittableRandom(2026);
        int progressed = 0;
        for (int trial = 0; trial < TRIALS; trial++) {
            Process child = ChildJvm.start(CrashingPublisher.class, tmp.toString());
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String ready = out.readLine();
            StringBuilder early = new StringBuilder();
            while (ready != null && !ready.equals("ready")) {
                early.append(ready).append('\n'); // e.g. logging warnings before the child is ready
                ready = out.readLine();
            }
            assertEquals("ready", ready, "child failed to start: " + early);
            // Kill anywhere in the first few publishes: inside artifacts, manifest, rename or pointer write.
            long delayMicros = random.nextLong(0, 25_000);
            TimeUnit.MICROSECONDS.sleep(delayMicros);
            child.destroyForcibly();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            out.close();

            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp);
            LatestPointer p = board.readLatest(); // never a read error
            for (long v = 1; v <= p.version(); v++) {
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
        assertTrue(progressed > 0);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp);
        // leftovers of killed publishers are visible and removable
        for (String left : board.leftovers()) {
            assertTrue(left.endsWith(".staging") || left.endsWith(".orphan") || left.endsWith(".tmp")
                    || left.contains(".stitch.lock.stale-") || left.startsWith("versions/weight_v"), left);
        }
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
            while (true) {
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
            }
        }
    }
}
