package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/conformance.md case 12: racing publishers of one version; exactly one wins, the board stays valid. */
class ConcurrentPublishTest {
    @TempDir
    Path tmp;

    @Test
    void threadsRacingForEachVersion() throws Exception {
        FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults());
        int racers = 4;
        ExecutorService pool = Executors.newFixedThreadPool(racers);
        try {
            for (long v = 1; v <= 8; v++) {
                long version = v;
                CyclicBarrier barrier = new CyclicBarrier(racers);
                List<Future<Manifest>> futures = new ArrayList<>();
                for (int i = 0; i < racers; i++) {
                    int id = i;
                    futures.add(pool.submit(() -> {
                        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp); // each racer its own instance
                        try (VersionPublication pub = board.beginPublish("r", version)) {
                            pub.writeArtifact("delta.bin", ArtifactKind.TRANSITION,
                                    out -> out.write(("racer " + id).getBytes(StandardCharsets.UTF_8)));
                            barrier.await(30, TimeUnit.SECONDS);
                            return pub.commit(ManifestFields.of("stitch_delta", "auto"));
                        }
                    }));
                }
                int winners = 0;
                for (Future<Manifest> f : futures) {
                    try {
                        f.get(60, TimeUnit.SECONDS);
                        winners++;
                    } catch (ExecutionException e) {
                        PointerRewindException rewind = assertInstanceOf(PointerRewindException.class, e.getCause());
                        assertTrue(rewind.getMessage().contains("refusing to rewind to " + version), rewind.getMessage());
                    }
                }
                assertEquals(1, winners, "version " + v);
                FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp);
                LatestPointer p = board.readLatest();
                assertEquals(v, p.version());
                board.verifyArtifacts(board.readManifest(v), true);
                assertTrue(board.leftovers().isEmpty(), "losers clean up their staging: " + board.leftovers());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Two JVMs race for the same versions; the board is checked after each round. */
    @Test
    void twoProcessesRacing() throws Exception {
        FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults());
        for (int round = 0; round < 3; round++) {
            long version = round + 1;
            Process a = ChildJvm.start(RacingPublisher.class, tmp.toString(), "r", Long.toString(version));
            Process b = ChildJvm.start(RacingPublisher.class, tmp.toString(), "r", Long.toString(version));
            String outA = ChildJvm.finish(a);
            String outB = ChildJvm.finish(b);
            int won = (outA.contains("WON") ? 1 : 0) + (outB.contains("WON") ? 1 : 0);
            int lost = (outA.contains("LOST PointerRewindException") ? 1 : 0) + (outB.contains("LOST PointerRewindException") ? 1 : 0);
            assertEquals(1, won, outA + " / " + outB);
            assertEquals(1, lost, outA + " / " + outB);
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp);
            assertEquals(version, board.readLatest().version());
            board.verifyArtifacts(board.readManifest(version), true);
            assertTrue(board.leftovers().isEmpty(), board.leftovers().toString());
        }
    }

    /** Child main: waits for a shared start instant, then publishes one version and prints WON or LOST. */
    public static final class RacingPublisher {
        public static void main(String[] args) throws IOException {
            Path root = Path.of(args[0]);
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
            try (VersionPublication pub = board.beginPublish(args[1], Long.parseLong(args[2]))) {
                pub.writeArtifact("delta.bin", ArtifactKind.TRANSITION, out -> out.write(new byte[4096]));
                // both children pass the pre-check before either commits, so the loser fails at compare-and-advance
                ChildJvm.rendezvous(root.resolve("barrier-" + args[2]), 2);
                pub.commit(ManifestFields.of("stitch_delta", "auto"));
                System.out.println("WON");
            } catch (PointerMoveException e) {
                System.out.println("LOST " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            System.out.flush();
        }
    }
}
