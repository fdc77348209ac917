package dev.stitch.s3;

import static dev.stitch.s3.S3Boards.BIG;
import static dev.stitch.s3.S3Boards.MULTIPART_BYTES;
import static dev.stitch.s3.S3Boards.PART;
import static dev.stitch.s3.S3Boards.key;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.GcReport;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.VersionPublication;
import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The S3 server dies while a publisher is uploading a multipart artifact (docs/protocol/board.md
 * §7.3): the publish fails naming the upload, and once the server is back nothing of the version is
 * readable and the pointer has not moved. What the dead publish left (its claim, the artifact it had
 * uploaded, the incomplete multipart upload) is listed by {@code leftovers()}; a successor whose
 * claims go stale quickly takes the claim over, clears them and publishes the version, and gc with no
 * orphan grace removes them as well.
 */
class S3BoardCrashTest {
    private static final String BUCKET = "crash";
    private static final String INDEX = "delta-00000.idx";
    private static final BoardAddress ADDRESS = S3Boards.address(BUCKET, "board");

    private S3ProxyProcess s3proxy;

    @TempDir
    Path tmp;

    @BeforeEach
    void startS3Proxy() throws IOException {
        s3proxy = S3ProxyProcess.start();
        s3proxy.createBucket(BUCKET);
    }

    @AfterEach
    void stopS3Proxy() {
        s3proxy.close();
    }

    private RemoteBulletinBoard open(String owner, BoardOptions options, Duration claimStale) throws IOException {
        return RemoteBulletinBoard.open(ADDRESS, options.withWriterId(owner),
                S3Boards.remote(tmp.resolve("cache-" + owner), S3Boards.store(s3proxy.endpoint()), claimStale));
    }

    /**
     * Publishes version 1, then starts version 2 and kills s3proxy once the second part of its payload
     * is half sent; restarts it. Returns the version 1 manifest; the failure is checked here.
     */
    private Manifest publishUntilTheServerDies() throws IOException {
        AtomicBoolean armed = new AtomicBoolean();
        AtomicBoolean killed = new AtomicBoolean();
        AtomicLong sentSinceArmed = new AtomicLong();
        StoreListener killer = new StoreListener() {
            @Override
            public void sent(long bytes) {
                if (armed.get() && sentSinceArmed.addAndGet(bytes) > PART + PART / 2 && killed.compareAndSet(false, true)) {
                    s3proxy.kill();
                }
            }
        };
        // one part at a time, so the first part is stored and the upload has something in it when the server dies
        StoreOptions store = S3Boards.store(s3proxy.endpoint()).withConcurrency(1).withAttempts(2).withListener(killer);
        Manifest v1;
        try (RemoteBulletinBoard doomed = S3Boards.create(ADDRESS, BoardOptions.defaults().withWriterId("trainer-1"),
                S3Boards.remote(tmp.resolve("cache-trainer-1"), store))) {
            v1 = S3Boards.publish(doomed, 1, S3Boards.delta(1, 10_000));
            VersionPublication pub = doomed.beginPublish(S3Boards.RUN, 2);
            pub.writeArtifact(INDEX, S3Boards.kindOf(INDEX), out -> out.write(S3Boards.bytes(7, 4096)));
            // The index goes up in the background; once it is on the store the payload's bytes are all that is sent.
            awaitObject(doomed, key(2, INDEX));
            armed.set(true);
            pub.writeArtifact(BIG, S3Boards.kindOf(BIG), out -> out.write(S3Boards.bytes(8, MULTIPART_BYTES)));
            IOException e = assertThrows(IOException.class, () -> pub.commit(ManifestFields.of("stitch_delta", "auto")));
            assertTrue(killed.get(), "the server was to die during the upload");
            assertTrue(e.getMessage().contains("upload part"), e.getMessage());
            assertTrue(e.getMessage().contains("s3://" + BUCKET + "/board/" + key(2, BIG)), e.getMessage());
        }
        s3proxy.restart();
        return v1;
    }

    /** Polls until {@code key} exists: the board uploads artifacts in the background as they are staged. */
    private static void awaitObject(RemoteBulletinBoard board, String key) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (board.store().stat(key).isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(key + " did not appear on the store within 30 s");
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted waiting for " + key);
            }
        }
    }

    /** The pointer still names version 1 and nothing of version 2 can be read. */
    private void assertOnlyVersionOneIsPublished(Manifest v1) throws IOException {
        try (RemoteBulletinBoard reader = open("reader", BoardOptions.defaults(), Duration.ofSeconds(60))) {
            LatestPointer p = reader.readLatest();
            assertEquals(1, p.version());
            assertEquals(S3Boards.checksumOf(v1), p.manifestChecksum());
            assertThrows(NoSuchFileException.class, () -> reader.readManifest(2));
            assertFalse(Files.exists(reader.versionDirectory(2).resolve(BIG)));
        }
    }

    private static final List<String> DEAD_PUBLISHERS_LEFTOVERS = List.of(
            "upload:" + key(2, BIG), "versions/.weight_v000002.claim", key(2, INDEX));

    @Test
    void aSuccessorTakesOverTheDeadPublishersClaimClearsWhatItLeftAndPublishesTheVersion() throws IOException {
        Manifest v1 = publishUntilTheServerDies();
        assertOnlyVersionOneIsPublished(v1);
        Map<String, byte[]> files = S3Boards.delta(2, MULTIPART_BYTES);
        Manifest v2;
        try (RemoteBulletinBoard successor = open("trainer-2", BoardOptions.defaults(), Duration.ofSeconds(1))) {
            assertEquals(DEAD_PUBLISHERS_LEFTOVERS, successor.leftovers());
            // the dead publisher never renews its claim again: after the stale age the successor takes it over
            v2 = S3Boards.publish(successor, 2, files);
            assertEquals(List.of(), successor.leftovers());
        }
        try (RemoteBulletinBoard reader = open("reader-2", BoardOptions.defaults(), Duration.ofSeconds(60))) {
            LatestPointer p = reader.readLatest();
            assertEquals(2, p.version());
            assertEquals(S3Boards.checksumOf(v2), p.manifestChecksum());
            Manifest m = reader.readManifest(2, p);
            assertEquals(files.size(), reader.verifyArtifacts(m, true).artifactsVerified());
            for (Artifact a : m.artifacts()) {
                assertArrayEquals(files.get(a.path()), Files.readAllBytes(reader.artifactPath(2, a)), a.path());
            }
        }
    }

    @Test
    void gcWithoutOrphanGraceRemovesWhatTheDeadPublisherLeft() throws IOException {
        Manifest v1 = publishUntilTheServerDies();
        BoardOptions noGrace = BoardOptions.defaults().withOrphanGrace(Duration.ZERO);
        try (RemoteBulletinBoard admin = open("admin", noGrace, Duration.ofSeconds(60))) {
            assertEquals(DEAD_PUBLISHERS_LEFTOVERS, admin.leftovers());
            GcReport r = admin.gc(1, 0);
            assertEquals(DEAD_PUBLISHERS_LEFTOVERS, r.removedPaths().stream().sorted().toList());
            assertEquals(List.of(), r.deletedVersions(), "with no anchor no version is deleted");
            assertEquals(List.of(), admin.leftovers());
            assertEquals(List.of(), admin.store().pendingUploads(""));
        }
        assertOnlyVersionOneIsPublished(v1);
        try (RemoteBulletinBoard reader = open("reader-2", BoardOptions.defaults(), Duration.ofSeconds(60))) {
            assertEquals(2, reader.verifyArtifacts(reader.readManifest(1), true).artifactsVerified());
        }
    }
}
