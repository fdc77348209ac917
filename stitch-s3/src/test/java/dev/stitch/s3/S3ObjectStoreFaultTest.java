package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.s3.testing.S3ProxyProcess;
import dev.stitch.testing.FaultInjectingProxy;
import dev.stitch.testing.RecordingStoreListener;
import dev.stitch.testing.RecordingStoreListener.Retry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Retries of an S3 board store through a {@link FaultInjectingProxy} in front of s3proxy: throttling,
 * resets and bodies cut short are retried (or resumed) within the attempts, every retry reported to
 * the listener; more faults than attempts fail with an error naming the object and the answer.
 */
class S3ObjectStoreFaultTest {
    private static final String BUCKET = "faults";
    private static final int ATTEMPTS = 4;
    private static final AtomicInteger BOARDS = new AtomicInteger();

    private static S3ProxyProcess s3proxy;

    private FaultInjectingProxy proxy;
    private RecordingStoreListener listener;
    private ObjectStore store;
    private String board;

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
    void openStoreThroughTheProxy() throws IOException {
        proxy = FaultInjectingProxy.start(s3proxy.endpoint());
        listener = new RecordingStoreListener();
        board = "board-" + BOARDS.incrementAndGet();
        StoreOptions options = StoreOptions.defaults().withAttempts(ATTEMPTS).withBackoff(Duration.ofMillis(1), Duration.ofMillis(10))
                .withS3Endpoint(proxy.endpoint(), true).withListener(listener);
        store = ObjectStores.open(URI.create("s3://" + BUCKET + "/" + board), options);
    }

    @AfterEach
    void close() throws IOException {
        store.close();
        proxy.close();
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        new SplittableRandom(n).nextBytes(b);
        return b;
    }

    private byte[] readRange(String key, long offset, long length, String etag) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        store.readRange(key, offset, length, etag, chunk -> {
            byte[] b = new byte[chunk.remaining()];
            chunk.get(b);
            out.write(b, 0, b.length);
        });
        return out.toByteArray();
    }

    @Test
    void slowDownIsRetriedAndEachRetryReported() throws IOException {
        proxy.inject(FaultInjectingProxy.slowDown(), 2, "PUT", "/latest.json");
        store.create("latest.json", "{\"version\":1}".getBytes(StandardCharsets.UTF_8), Map.of());
        assertEquals(2, proxy.faultsInjected());
        List<Retry> retries = listener.retriesOf("latest.json");
        assertEquals(List.of(1, 2), retries.stream().map(Retry::attempt).toList());
        for (Retry r : retries) {
            assertEquals("PUT", r.operation());
            S3Exception cause = assertInstanceOf(S3Exception.class, r.cause());
            assertEquals(503, cause.statusCode());
            assertEquals("SlowDown", cause.awsErrorDetails().errorCode());
        }
        assertArrayEquals("{\"version\":1}".getBytes(StandardCharsets.UTF_8), store.read("latest.json", null, 100).bytes());
    }

    @Test
    void connectionResetsAreRetriedAndReported() throws IOException {
        store.create("latest.json", "{\"version\":1}".getBytes(StandardCharsets.UTF_8), Map.of());
        proxy.inject(FaultInjectingProxy.reset(), 2, "GET", "/latest.json");
        assertArrayEquals("{\"version\":1}".getBytes(StandardCharsets.UTF_8), store.read("latest.json", null, 100).bytes());
        assertEquals(2, proxy.faultsInjected());
        List<Retry> retries = listener.retriesOf("latest.json");
        assertEquals(2, retries.size());
        assertEquals("GET", retries.getFirst().operation());
    }

    @Test
    void aBodyCutShortMidRangeResumesAfterTheLastDeliveredByte() throws IOException {
        byte[] bytes = bytes(3 << 20);
        String key = "versions/weight_v000001/delta.bin";
        ObjectInfo info = store.create(key, bytes, Map.of());
        listener.clear();
        proxy.inject(FaultInjectingProxy.truncateBody((1 << 20) + 123), 2, "GET", "/delta.bin");
        assertArrayEquals(bytes, readRange(key, 0, bytes.length, info.etag()));
        assertEquals(2, proxy.faultsInjected());
        List<Retry> retries = listener.retriesOf(key);
        assertEquals(2, retries.size());
        assertTrue(retries.stream().allMatch(r -> r.operation().equals("GET range")), retries.toString());
        // each byte reached the sink once: the resumed requests asked only for what was still missing
        assertEquals(bytes.length, listener.received());
    }

    @Test
    void moreThrottlingThanAttemptsFailsNamingTheObjectAndTheAnswer() {
        proxy.inject(FaultInjectingProxy.slowDown(), 100, "PUT", "/latest.json");
        IOException e = assertThrows(IOException.class,
                () -> store.create("latest.json", "{}".getBytes(StandardCharsets.UTF_8), Map.of()));
        assertFalse(e instanceof PreconditionFailedException);
        assertTrue(e.getMessage().contains("s3://" + BUCKET + "/" + board + "/latest.json"), e.getMessage());
        assertTrue(e.getMessage().contains(ATTEMPTS + " tries"), e.getMessage());
        assertTrue(e.getMessage().contains("503 SlowDown"), e.getMessage());
        assertEquals(ATTEMPTS, proxy.faultsInjected());
        assertEquals(ATTEMPTS - 1, listener.retriesOf("latest.json").size());
    }

    @Test
    void moreResetsThanAttemptsFailNamingTheObject() throws IOException {
        store.create("latest.json", "{}".getBytes(StandardCharsets.UTF_8), Map.of());
        proxy.inject(FaultInjectingProxy.reset(), 100, "GET", "/latest.json");
        IOException e = assertThrows(IOException.class, () -> store.read("latest.json", null, 100));
        assertTrue(e.getMessage().contains("s3://" + BUCKET + "/" + board + "/latest.json"), e.getMessage());
        assertTrue(e.getMessage().contains(ATTEMPTS + " tries"), e.getMessage());
        assertEquals(ATTEMPTS, proxy.faultsInjected());
    }

    @Test
    void bodiesCutShortWithoutProgressExhaustTheAttempts() throws IOException {
        byte[] bytes = bytes(100_000);
        String key = "versions/weight_v000001/delta.bin";
        ObjectInfo info = store.create(key, bytes, Map.of());
        proxy.inject(FaultInjectingProxy.truncateBody(0), 100, "GET", "/delta.bin");
        IOException e = assertThrows(IOException.class, () -> readRange(key, 0, bytes.length, info.etag()));
        assertTrue(e.getMessage().contains("s3://" + BUCKET + "/" + board + "/" + key), e.getMessage());
        assertTrue(e.getMessage().contains("without progress"), e.getMessage());
        assertEquals(ATTEMPTS, proxy.faultsInjected());
        assertEquals(ATTEMPTS - 1, listener.retriesOf(key).size());
    }

    /**
     * The caveat of conditional writes over a lossy link: the first PUT creates the object, its answer
     * is lost, the SDK's retry is refused by the object the first one wrote. The store reports the
     * refusal as it is; the metadata shows the caller that the object is its own.
     */
    @Test
    void aCreateWhoseAnswerWasLostIsRefusedByItsOwnSuccess() throws IOException {
        String key = "versions/weight_v000001/manifest.json";
        proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "PUT", "/manifest.json");
        PreconditionFailedException e = assertThrows(PreconditionFailedException.class,
                () -> store.create(key, "{}".getBytes(StandardCharsets.UTF_8), Map.of("stitch-writer", "trainer-1")));
        assertEquals(key, e.key());
        assertTrue(e.getMessage().contains("tried 2 times"), e.getMessage());
        assertEquals(1, listener.retriesOf(key).size());
        assertEquals("trainer-1", store.stat(key).orElseThrow().metadata().get("stitch-writer"));
    }

    @Test
    void throttledPartsOfAMultipartUploadAreRetried() throws IOException {
        byte[] bytes = bytes(2 * StoreOptions.MIN_PART_BYTES + 1);
        Path file = Files.createTempFile("parts", ".bin");
        try {
            Files.write(file, bytes);
            String key = "versions/weight_v000001/delta.bin";
            try (ObjectStore multipart = ObjectStores.open(store.location(), StoreOptions.defaults().withAttempts(ATTEMPTS)
                    .withBackoff(Duration.ofMillis(1), Duration.ofMillis(10)).withPartBytes(StoreOptions.MIN_PART_BYTES)
                    .withS3Endpoint(proxy.endpoint(), true).withListener(listener))) {
                proxy.inject(FaultInjectingProxy.slowDown(), 2, "PUT", "partNumber=2");
                proxy.inject(FaultInjectingProxy.reset(), 1, "POST", "uploadId=");
                ObjectInfo info = multipart.create(key, file, Map.of());
                assertEquals(3, proxy.faultsInjected());
                assertEquals(3, listener.retriesOf(key).size());
                assertArrayEquals(bytes, readRange(key, 0, bytes.length, info.etag()));
                assertEquals(List.of(), multipart.pendingUploads(""));
            }
        } finally {
            Files.delete(file);
        }
    }
}
