package dev.stitch.s3;

import static dev.stitch.s3.S3Boards.BIG;
import static dev.stitch.s3.S3Boards.MULTIPART_BYTES;
import static dev.stitch.s3.S3Boards.key;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.s3.testing.S3ProxyProcess;
import dev.stitch.testing.FaultInjectingProxy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Publishing and fetching a board through a {@link FaultInjectingProxy} in front of s3proxy
 * (docs/protocol/board.md §7.3, §7.5): throttling, resets, answers lost after the server did the
 * work and bodies cut short are retried or resumed, and the version is whole; more faults than
 * attempts fail with an error naming the object, and leave no version and no unverified file; a
 * failed publish returns only once its other uploads have stopped, leaving nothing behind.
 */
class S3BoardFaultTest {
    private static final String BUCKET = "faults";
    private static final String INDEX = "delta-00000.idx";
    private static final AtomicInteger BOARDS = new AtomicInteger();

    private static S3ProxyProcess s3proxy;

    @TempDir
    Path tmp;
    private FaultInjectingProxy proxy;
    private BoardAddress address;

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

    @BeforeEach
    void startProxy() throws IOException {
        proxy = FaultInjectingProxy.start(s3proxy.endpoint());
        address = S3Boards.address(BUCKET, "board-" + BOARDS.incrementAndGet());
    }

    @AfterEach
    void stopProxy() throws IOException {
        proxy.close();
    }

    /** A board whose requests go through the fault-injecting proxy; it creates the board's pointer when there is none. */
    private RemoteBulletinBoard throughProxy(String cache) throws IOException {
        return S3Boards.create(address, BoardOptions.defaults(), S3Boards.remote(tmp.resolve(cache), S3Boards.store(proxy.endpoint())));
    }

    /** A board that talks to s3proxy directly; it creates the board's pointer when there is none. */
    private RemoteBulletinBoard direct(String cache) throws IOException {
        return S3Boards.create(address, BoardOptions.defaults(), S3Boards.remote(tmp.resolve(cache), S3Boards.store(s3proxy.endpoint())));
    }

    /** Publishes version 1 without faults; returns its files. */
    private Map<String, byte[]> publishDirectly() throws IOException {
        Map<String, byte[]> files = S3Boards.delta(1, MULTIPART_BYTES);
        try (RemoteBulletinBoard writer = direct("writer-cache")) {
            S3Boards.publish(writer, 1, files);
        }
        return files;
    }

    /** Reads version 1 straight from s3proxy, verifies it and compares every file with {@code files}. */
    private void assertVersionOneIs(Map<String, byte[]> files, Manifest committed) throws IOException {
        try (RemoteBulletinBoard reader = direct("check-cache")) {
            LatestPointer p = reader.readLatest();
            assertEquals(1, p.version());
            assertEquals(S3Boards.checksumOf(committed), p.manifestChecksum());
            assertCached(reader, reader.readManifest(1, p), files);
        }
    }

    private static void assertCached(RemoteBulletinBoard reader, Manifest m, Map<String, byte[]> files) throws IOException {
        assertEquals(files.size(), reader.verifyArtifacts(m, true).artifactsVerified());
        for (Artifact a : m.artifacts()) {
            assertArrayEquals(files.get(a.path()), Files.readAllBytes(reader.artifactPath(m.version(), a)), a.path());
        }
    }

    @Test
    void throttlingAndResetsDuringAPublishAreRetriedAndTheVersionIsWhole() throws IOException {
        Map<String, byte[]> files = S3Boards.delta(1, MULTIPART_BYTES);
        Manifest committed;
        try (RemoteBulletinBoard writer = throughProxy("writer-cache")) {
            proxy.inject(FaultInjectingProxy.slowDown(), 2, "PUT", "partNumber=2");
            proxy.inject(FaultInjectingProxy.reset(), 1, "POST", "uploadId=");
            proxy.inject(FaultInjectingProxy.reset(), 1, "PUT", "/" + INDEX);
            proxy.inject(FaultInjectingProxy.slowDown(), 1, "PUT", "/" + Manifest.FILE_NAME);
            proxy.inject(FaultInjectingProxy.reset(), 1, "PUT", "/" + LatestPointer.FILE_NAME);
            committed = S3Boards.publish(writer, 1, files);
            assertEquals(6, proxy.faultsInjected());
            assertEquals(6, writer.stats().retries(), "each fault costs one reported retry");
        }
        assertVersionOneIs(files, committed);
    }

    /**
     * The server wrote, the answer was lost, and the retried conditional write is refused by the write
     * itself: the publisher recognizes its own artifact (owner and checksum metadata), its own manifest
     * (same bytes) and its own pointer move (same version and manifest checksum), so the publish succeeds.
     */
    @Test
    void writesWhoseAnswersWereLostAreRecognizedAsThePublishersOwn() throws IOException {
        Map<String, byte[]> files = S3Boards.delta(1, MULTIPART_BYTES);
        Manifest committed;
        try (RemoteBulletinBoard writer = throughProxy("writer-cache")) {
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "PUT", ".claim");
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "PUT", "/" + INDEX);
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "POST", "?uploads");
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "POST", "uploadId=");
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "PUT", "/" + Manifest.FILE_NAME);
            proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "PUT", "/" + LatestPointer.FILE_NAME);
            committed = S3Boards.publish(writer, 1, files);
            assertEquals(6, proxy.faultsInjected());
            assertEquals(List.of(), writer.leftovers());
        }
        assertVersionOneIs(files, committed);
    }

    @Test
    void throttlingAndResetsDuringAFetchAreRetried() throws IOException {
        Map<String, byte[]> files = publishDirectly();
        try (RemoteBulletinBoard reader = throughProxy("reader-cache")) {
            proxy.inject(FaultInjectingProxy.slowDown(), 2, "GET", "/" + LatestPointer.FILE_NAME);
            LatestPointer p = reader.readLatest();
            Manifest m = reader.readManifest(1, p);
            proxy.inject(FaultInjectingProxy.slowDown(), 2, "GET", "/" + BIG);
            proxy.inject(FaultInjectingProxy.reset(), 2, "GET", "/" + BIG);
            proxy.inject(FaultInjectingProxy.reset(), 1, "HEAD", "/" + INDEX);
            assertCached(reader, m, files);
            assertEquals(7, proxy.faultsInjected());
            assertEquals(7, reader.stats().retries(), "each fault costs one reported retry");
        }
    }

    @Test
    void bodiesCutShortDuringAFetchResumeAfterTheLastDeliveredByte() throws IOException {
        Map<String, byte[]> files = publishDirectly();
        try (RemoteBulletinBoard reader = throughProxy("reader-cache")) {
            Manifest m = reader.readManifest(1, reader.readLatest());
            long before = reader.stats().bytesReceived();
            proxy.inject(FaultInjectingProxy.truncateBody((1 << 20) + 123), 3, "GET", "/" + BIG);
            assertCached(reader, m, files);
            assertEquals(3, proxy.faultsInjected());
            assertTrue(reader.stats().retries() >= 3, "retries: " + reader.stats().retries());
            // every byte reached the cache once: each resumed request asked only for what was still missing
            long artifactBytes = files.values().stream().mapToLong(b -> b.length).sum();
            assertEquals(artifactBytes, reader.stats().bytesReceived() - before);
        }
    }

    @Test
    void moreThrottlingThanAttemptsFailsThePublishAndLeavesNoVersion() throws IOException {
        try (RemoteBulletinBoard writer = throughProxy("writer-cache")) {
            proxy.inject(FaultInjectingProxy.slowDown(), 1000, "PUT", "partNumber=");
            IOException e = assertThrows(IOException.class, () -> S3Boards.publish(writer, 1, S3Boards.delta(1, MULTIPART_BYTES)));
            assertTrue(e.getMessage().contains(address + "/" + key(1, BIG)), e.getMessage());
            assertTrue(e.getMessage().contains("HTTP 503 SlowDown"), e.getMessage());
            proxy.clearFaults();
            // the failed publish took back its claim, its uploaded index and its multipart upload
            assertEquals(List.of(), writer.leftovers());
            assertFalse(Files.exists(writer.versionDirectory(1)), "nothing of the version in the publisher's cache");
            try (Stream<Path> staging = Files.list(tmp.resolve("writer-cache").resolve("staging"))) {
                assertEquals(List.of(), staging.toList(), "the staging directory is removed");
            }
        }
        try (RemoteBulletinBoard reader = direct("reader-cache")) {
            assertEquals(0, reader.readLatest().version());
            assertThrows(NoSuchFileException.class, () -> reader.readManifest(1));
        }
    }

    /**
     * The first artifact's upload fails while the second, a multipart upload, is in the middle of a
     * part: when the publish returns its error, the second upload has stopped and aborted its multipart
     * upload, so nothing of the publication is left and nothing of it can land after the claim is gone.
     */
    @Test
    void aFailedPublishStopsItsOtherUploadsBeforeItReturns() throws IOException {
        // The payload's first part is held once, mid-body, until the failed publish interrupts it.
        CountDownLatch never = new CountDownLatch(1);
        AtomicLong sent = new AtomicLong();
        AtomicBoolean held = new AtomicBoolean();
        AtomicBoolean stopped = new AtomicBoolean();
        StoreListener holdPayload = new StoreListener() {
            @Override
            public void sent(long bytes) {
                if (sent.addAndGet(bytes) > 256 << 10 && held.compareAndSet(false, true)) {
                    try {
                        never.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        stopped.set(true);
                        Thread.currentThread().interrupt();
                    }
                }
            }
        };
        // Backoff long enough that the interrupted upload's abort, retried once, outlasts a cleanup that does not wait for it.
        StoreOptions store = S3Boards.store(proxy.endpoint()).withBackoff(Duration.ofMillis(200), Duration.ofMillis(400))
                .withListener(holdPayload);
        try (RemoteBulletinBoard writer = S3Boards.create(address, BoardOptions.defaults(), S3Boards.remote(tmp.resolve("cache"), store))) {
            proxy.inject(FaultInjectingProxy.slowDown(), 1000, "PUT", "/" + INDEX);
            proxy.inject(FaultInjectingProxy.slowDown(), 1, "DELETE", "uploadId=");
            Map<String, byte[]> files = new LinkedHashMap<>();
            files.put(INDEX, S3Boards.bytes(1, 4096));
            files.put(BIG, S3Boards.bytes(2, MULTIPART_BYTES));
            IOException e = assertThrows(IOException.class, () -> S3Boards.publish(writer, 1, files));
            assertTrue(e.getMessage().contains(address + "/" + key(1, INDEX)), e.getMessage());
            assertTrue(held.get() && stopped.get(), "the payload's upload was in flight and was interrupted by the failed publish");
            assertEquals(List.of(), writer.leftovers());
            assertEquals(List.of(), writer.store().pendingUploads(""));
        }
    }

    @Test
    void moreResetsThanAttemptsFailTheFetchAndNothingIsCachedUnderItsName() throws IOException {
        Map<String, byte[]> files = publishDirectly();
        try (RemoteBulletinBoard reader = throughProxy("reader-cache")) {
            Manifest m = reader.readManifest(1, reader.readLatest());
            proxy.inject(FaultInjectingProxy.reset(), 1000, "GET", "/" + BIG);
            IOException e = assertThrows(IOException.class, () -> reader.verifyArtifacts(m, true));
            assertFalse(e instanceof ArtifactVerificationException, e.toString());
            assertTrue(e.getMessage().contains(address + "/" + key(1, BIG)), e.getMessage());
            assertFalse(Files.exists(reader.versionDirectory(1).resolve(BIG)), "an unverified file under its final name");
            assertEquals(0, reader.stats().verificationFailures());
            proxy.clearFaults();
            assertCached(reader, m, files);
        }
    }
}
