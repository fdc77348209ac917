package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStore.PendingUpload;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server dies in the middle of a multipart upload (docs/protocol/board.md §7): the create fails
 * with an error naming the object, the key never appears, what the failed abort left behind is
 * listed and released once the server is back, and the create then succeeds.
 */
class S3ObjectStoreCrashTest {
    private static final String BUCKET = "crash";
    private static final String KEY = "versions/weight_v000001/delta.bin";

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

    @Test
    void aServerKilledDuringAMultipartUploadLeavesNoObjectAndAnUploadGcCanRelease() throws IOException {
        int part = StoreOptions.MIN_PART_BYTES;
        byte[] bytes = new byte[3 * part];
        new SplittableRandom(3).nextBytes(bytes);
        Path file = Files.write(tmp.resolve("delta.bin"), bytes);
        // The server dies once the SDK has taken half of the second part: one part at a time, so the first
        // part has been stored by then and the upload exists with something in it.
        AtomicLong sent = new AtomicLong();
        AtomicBoolean killed = new AtomicBoolean();
        StoreListener killer = new StoreListener() {
            @Override
            public void sent(long n) {
                if (sent.addAndGet(n) > part + part / 2 && killed.compareAndSet(false, true)) {
                    s3proxy.kill();
                }
            }
        };
        StoreOptions options = s3proxy.options(StoreOptions.defaults().withPartBytes(part).withConcurrency(1).withAttempts(2)
                .withBackoff(Duration.ofMillis(1), Duration.ofMillis(5)).withTimeout(Duration.ofSeconds(10)).withListener(killer));
        URI board = URI.create("s3://" + BUCKET + "/board");
        try (ObjectStore store = ObjectStores.open(board, options)) {
            IOException e = assertThrows(IOException.class, () -> store.create(KEY, file, Map.of("stitch-writer", "first")));
            assertTrue(killed.get(), "the server was to be killed during the upload");
            assertFalse(e instanceof PreconditionFailedException, e.toString());
            assertTrue(e.getMessage().contains("s3://" + BUCKET + "/board/" + KEY), e.getMessage());
            assertTrue(e.getMessage().contains("upload part"), e.getMessage());
            // the abort could not reach the dead server either; it rides along with the failure
            assertEquals(1, e.getSuppressed().length, List.of(e.getSuppressed()).toString());
            assertTrue(e.getSuppressed()[0].getMessage().contains("abort multipart upload"), e.getSuppressed()[0].getMessage());

            s3proxy.restart();

            assertEquals(Optional.empty(), store.stat(KEY));
            List<PendingUpload> leftovers = store.pendingUploads("");
            assertTrue(leftovers.size() <= 1, leftovers.toString());
            for (PendingUpload u : leftovers) {
                assertEquals(KEY, u.key());
                store.abort(u);
            }
            assertEquals(List.of(), store.pendingUploads(""));

            ObjectInfo info = store.create(KEY, file, Map.of("stitch-writer", "second"));
            assertEquals("second", store.stat(KEY).orElseThrow().metadata().get("stitch-writer"));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            store.readRange(KEY, 0, bytes.length, info.etag(), chunk -> {
                byte[] b = new byte[chunk.remaining()];
                chunk.get(b);
                out.write(b, 0, b.length);
            });
            assertArrayEquals(bytes, out.toByteArray());
        }
    }
}
