package dev.stitch.s3;

import static dev.stitch.s3.S3Boards.BIG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.PointerRewindException;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two publishers, each with its own board instance and owner, publish the same version with different
 * bytes at the same moment (docs/protocol/board.md §2.3 "Concurrency", §7.3). The version's claim
 * lets one of them through; the other waits for it and then finds the version published, which is
 * {@code PointerRewind} (publishing a version that exists), never a second commit. The pointer names
 * the winner's manifest, the winner's bytes are what readers verify, and the loser leaves nothing.
 */
class S3BoardRaceTest {
    private static final String BUCKET = "race";
    private static final int ROUNDS = 10;

    private static S3ProxyProcess s3proxy;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startS3Proxy() throws IOException {
        s3proxy = S3ProxyProcess.start();
        s3proxy.createBucket(BUCKET);
    }

    @AfterAll
    static void stopS3Proxy() {
        if (s3proxy != null) {
            s3proxy.close();
        }
    }

    private RemoteBulletinBoard open(BoardAddress address, String owner) throws IOException {
        return RemoteBulletinBoard.open(address, BoardOptions.defaults().withWriterId(owner),
                S3Boards.remote(tmp.resolve("cache-" + owner), S3Boards.store(s3proxy.endpoint())));
    }

    /** One publisher's attempt at a version: the manifest it committed, or why it did not. */
    private record Attempt(String owner, Map<String, byte[]> files, Manifest committed, IOException refused) {
    }

    @Test
    void ofTwoPublishersOfOneVersionExactlyOneCommitsAndTheOtherIsRefusedAsARewind() throws Exception {
        BoardAddress address = S3Boards.address(BUCKET, "board");
        try (RemoteBulletinBoard a = S3Boards.create(address, BoardOptions.defaults().withWriterId("trainer-a"),
                     S3Boards.remote(tmp.resolve("cache-trainer-a"), S3Boards.store(s3proxy.endpoint())));
             RemoteBulletinBoard b = open(address, "trainer-b");
             RemoteBulletinBoard reader = open(address, "reader");
             ExecutorService pool = Executors.newFixedThreadPool(2)) {
            for (long v = 1; v <= ROUNDS; v++) {
                long version = v;
                CyclicBarrier start = new CyclicBarrier(2);
                List<Future<Attempt>> attempts = new ArrayList<>();
                for (RemoteBulletinBoard board : List.of(a, b)) {
                    String owner = board == a ? "trainer-a" : "trainer-b";
                    // same paths, different bytes: only the pointer's manifest_checksum tells whose version it is
                    Map<String, byte[]> files = Map.of(BIG, S3Boards.bytes(version * 31 + (board == a ? 1 : 2), 200_000));
                    attempts.add(pool.submit(() -> {
                        start.await();
                        try {
                            return new Attempt(owner, files, S3Boards.publish(board, version, files), null);
                        } catch (IOException e) {
                            return new Attempt(owner, files, null, e);
                        }
                    }));
                }
                List<Attempt> results = new ArrayList<>();
                for (Future<Attempt> f : attempts) {
                    results.add(get(f));
                }
                List<Attempt> committed = results.stream().filter(r -> r.committed() != null).toList();
                assertEquals(1, committed.size(), "version " + v + ": " + results);
                Attempt winner = committed.getFirst();
                Attempt loser = results.stream().filter(r -> r != winner).findFirst().orElseThrow();
                PointerRewindException rewind = assertInstanceOf(PointerRewindException.class, loser.refused(),
                        "version " + v + ": the loser failed otherwise");
                assertTrue(rewind.getMessage().contains("latest is at version " + v), rewind.getMessage());

                LatestPointer p = reader.readLatest();
                assertEquals(v, p.version());
                assertEquals(S3Boards.checksumOf(winner.committed()), p.manifestChecksum(), "version " + v);
                Manifest m = reader.readManifest(v, p);
                assertEquals(winner.committed(), m);
                reader.verifyArtifacts(m, true);
                for (Artifact art : m.artifacts()) {
                    assertArrayEquals(winner.files().get(art.path()), Files.readAllBytes(reader.artifactPath(v, art)));
                }
                // neither the loser's claim nor any of its bytes is left on the board
                assertEquals(List.of(), a.leftovers(), "version " + v);
            }
        }
    }

    private static Attempt get(Future<Attempt> f) throws Exception {
        try {
            return f.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception x ? x : e;
        }
    }
}
