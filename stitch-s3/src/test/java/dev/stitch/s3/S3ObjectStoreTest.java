package dev.stitch.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStoreContract;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The object-store contract against S3 (s3proxy), and what only S3 has: prefixes, multipart, content types. */
class S3ObjectStoreTest extends ObjectStoreContract {
    private static final String BUCKET = "boards";
    private static final AtomicInteger BOARDS = new AtomicInteger();

    private static S3ProxyProcess s3proxy;

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

    /** Each test gets a board of its own under a fresh prefix. */
    @Override
    protected ObjectStore newStore(StoreOptions options) throws IOException {
        return ObjectStores.open(URI.create("s3://" + BUCKET + "/team/board-" + BOARDS.incrementAndGet()), s3proxy.options(options));
    }

    @Override
    protected void seed(String key, byte[] bytes) throws IOException {
        store.create(key, bytes, Map.of());
    }

    @Test
    void storeOpensThroughTheServiceLoader() {
        assertInstanceOf(S3ObjectStore.class, store);
        assertTrue(store.writable());
    }

    @Test
    void keysLiveUnderTheBoardPrefix() throws IOException {
        store.create("latest.json", "{}".getBytes(StandardCharsets.UTF_8), Map.of());
        String prefix = store.location().getPath().substring(1) + "/";
        try (var s3 = s3proxy.client()) {
            List<String> keys = s3.listObjectsV2(b -> b.bucket(BUCKET).prefix(prefix)).contents().stream()
                    .map(o -> o.key()).toList();
            assertEquals(List.of(prefix + "latest.json"), keys);
        }
    }

    @Test
    void aBoardAtTheBucketRootUsesBareKeys() throws IOException {
        s3proxy.createBucket("root-board");
        try (ObjectStore root = ObjectStores.open(URI.create("s3://root-board"), s3proxy.options(options()));
             var s3 = s3proxy.client()) {
            root.create("versions/weight_v000001/manifest.json", "{}".getBytes(StandardCharsets.UTF_8), Map.of());
            assertEquals(List.of("versions/weight_v000001/manifest.json"),
                    s3.listObjectsV2(b -> b.bucket("root-board")).contents().stream().map(o -> o.key()).toList());
            assertEquals(List.of("versions/weight_v000001/manifest.json"),
                    root.list("").stream().map(ObjectInfo::key).toList());
        }
    }

    @Test
    void documentsAreJsonAndArtifactsOpaque() throws IOException {
        store.create("latest.json", "{}".getBytes(StandardCharsets.UTF_8), Map.of());
        store.create("versions/weight_v000001/delta.bin", new byte[3], Map.of());
        String prefix = store.location().getPath().substring(1) + "/";
        try (var s3 = s3proxy.client()) {
            assertEquals("application/json", s3.headObject(b -> b.bucket(BUCKET).key(prefix + "latest.json")).contentType());
            assertEquals("application/octet-stream",
                    s3.headObject(b -> b.bucket(BUCKET).key(prefix + "versions/weight_v000001/delta.bin")).contentType());
        }
    }

    @Test
    void aFileOfThePartSizeOrMoreIsUploadedInParts() throws IOException {
        byte[] bytes = large();
        Path file = Files.write(tmp.resolve("parts.bin"), bytes);
        ObjectInfo created = store.create("versions/weight_v000001/parts.bin", file, Map.of());
        // S3's multipart entity tag is the MD5 of the parts' MD5s followed by "-" and the part count
        assertTrue(created.etag().endsWith("-3\""), created.etag());
        Path exact = Files.write(tmp.resolve("exact.bin"), java.util.Arrays.copyOf(bytes, StoreOptions.MIN_PART_BYTES));
        ObjectInfo one = store.create("versions/weight_v000001/exact.bin", exact, Map.of());
        assertTrue(one.etag().endsWith("-1\""), one.etag());
        assertArrayEquals(java.util.Arrays.copyOf(bytes, StoreOptions.MIN_PART_BYTES),
                readRange("versions/weight_v000001/exact.bin", 0, StoreOptions.MIN_PART_BYTES, one.etag()));
    }

    @Test
    void uploadsReportTheBytesSentAndReadsTheBytesReceived() throws IOException {
        dev.stitch.testing.RecordingStoreListener listener = new dev.stitch.testing.RecordingStoreListener();
        try (ObjectStore counted = newStore(options().withListener(listener))) {
            byte[] bytes = large();
            Path file = Files.write(tmp.resolve("counted.bin"), bytes);
            ObjectInfo info = counted.create("versions/weight_v000001/counted.bin", file, Map.of());
            assertEquals(bytes.length, listener.sent());
            counted.readRange("versions/weight_v000001/counted.bin", 0, bytes.length, info.etag(), chunk -> chunk.position(chunk.limit()));
            assertEquals(bytes.length, listener.received());
        }
    }
}
