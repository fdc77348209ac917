package dev.stitch.board.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link ObjectStore} does (docs/protocol/board.md §7): whole and ranged reads,
 * conditional reads and writes, listing, deletion and multipart creates. A store implementation's
 * test extends this with a fresh, empty store per test and a way to put objects into it; read-only
 * stores (an HTTP board) seed through the server behind them, and the write-side tests skip.
 */
public abstract class ObjectStoreContract {

    /** Two and a bit parts at the smallest part size: ranged reads cross part boundaries, creates go multipart. */
    protected static final int LARGE = 2 * StoreOptions.MIN_PART_BYTES + 12_345;

    private static byte[] large;

    /** The store under test, fresh for each test. */
    protected ObjectStore store;

    @TempDir
    protected Path tmp;

    /** A fresh store with nothing in it, talking with {@code options}. */
    protected abstract ObjectStore newStore(StoreOptions options) throws IOException;

    /** Puts {@code bytes} at {@code key} where {@link #store} reads it. */
    protected abstract void seed(String key, byte[] bytes) throws IOException;

    /** Options of the store under test: the smallest parts, three in flight, quick retries. */
    protected StoreOptions options() {
        return StoreOptions.defaults().withPartBytes(StoreOptions.MIN_PART_BYTES).withConcurrency(3)
                .withBackoff(Duration.ofMillis(1), Duration.ofMillis(20)).withAttempts(3);
    }

    @BeforeEach
    void openStore() throws IOException {
        store = newStore(options());
    }

    @AfterEach
    void closeStore() throws IOException {
        if (store != null) {
            store.close();
        }
    }

    /** Deterministic bytes that differ at every offset class a range could be off by. */
    protected static byte[] generated(int size, long seed) {
        byte[] b = new byte[size];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < size; i += 8) {
            long v = r.nextLong();
            for (int j = 0; j < 8 && i + j < size; j++) {
                b[i + j] = (byte) (v >>> (8 * j));
            }
        }
        return b;
    }

    protected static synchronized byte[] large() {
        if (large == null) {
            large = generated(LARGE, 42);
        }
        return large;
    }

    /** Reads {@code [offset, offset + length)} through {@link ObjectStore#readRange} into one array. */
    protected byte[] readRange(String key, long offset, long length, String etag) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) length);
        store.readRange(key, offset, length, etag, chunk -> {
            byte[] b = new byte[chunk.remaining()];
            chunk.get(b);
            out.write(b, 0, b.length);
        });
        return out.toByteArray();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // ---- reads: every store ----

    @Test
    void readOfMissingKeyIsNoSuchFile() {
        NoSuchFileException e = assertThrows(NoSuchFileException.class, () -> store.read("missing.json", null, 1 << 20));
        assertTrue(e.getMessage().contains("missing.json"), e.getMessage());
    }

    @Test
    void statOfMissingKeyIsEmpty() throws IOException {
        assertEquals(Optional.empty(), store.stat("versions/missing/manifest.json"));
    }

    @Test
    void seededObjectReadsBackWithTheEntityTagStatReports() throws IOException {
        seed("latest.json", utf8("{\"version\":1}"));
        StoredDocument doc = store.read("latest.json", null, 1 << 20);
        assertFalse(doc.notModified());
        assertArrayEquals(utf8("{\"version\":1}"), doc.bytes());
        assertNotNull(doc.etag());
        ObjectInfo info = store.stat("latest.json").orElseThrow();
        assertEquals("latest.json", info.key());
        assertEquals(13, info.size());
        assertEquals(doc.etag(), info.etag());
    }

    @Test
    void readWithTheCurrentEntityTagIsNotModified() throws IOException {
        seed("latest.json", utf8("{\"version\":2}"));
        String etag = store.read("latest.json", null, 1 << 20).etag();
        StoredDocument again = store.read("latest.json", etag, 1 << 20);
        assertTrue(again.notModified());
        assertNull(again.bytes());
        assertEquals(etag, again.etag());
    }

    @Test
    void readWithAnotherEntityTagReturnsTheBytes() throws IOException {
        seed("latest.json", utf8("{\"version\":3}"));
        StoredDocument doc = store.read("latest.json", "\"0123456789abcdef0123456789abcdef\"", 1 << 20);
        assertArrayEquals(utf8("{\"version\":3}"), doc.bytes());
    }

    @Test
    void readOfADocumentOverTheLimitFails() throws IOException {
        seed("versions/weight_v000001/manifest.json", new byte[1000]);
        IOException e = assertThrows(IOException.class, () -> store.read("versions/weight_v000001/manifest.json", null, 999));
        assertFalse(e instanceof NoSuchFileException);
        assertTrue(e.getMessage().contains("999"), e.getMessage());
    }

    @Test
    void rangedReadsReturnExactlyTheRequestedBytes() throws IOException {
        byte[] bytes = large();
        seed("versions/weight_v000001/delta.bin", bytes);
        String key = "versions/weight_v000001/delta.bin";
        ObjectInfo info = store.stat(key).orElseThrow();
        assertEquals(bytes.length, info.size());
        int part = StoreOptions.MIN_PART_BYTES;
        long[][] ranges = {{0, 1}, {0, bytes.length}, {part - 10, 20}, {2L * part - 1, 2}, {bytes.length - 1, 1},
                {123_456, 3 << 20}, {bytes.length - 70_000, 70_000}};
        for (long[] r : ranges) {
            byte[] got = readRange(key, r[0], r[1], info.etag());
            assertArrayEquals(java.util.Arrays.copyOfRange(bytes, (int) r[0], (int) (r[0] + r[1])), got,
                    "bytes " + r[0] + "+" + r[1]);
        }
        assertEquals(0, readRange(key, 10, 0, info.etag()).length);
    }

    @Test
    void rangedReadBoundToAnotherEntityTagFailsItsPrecondition() throws IOException {
        seed("versions/weight_v000001/delta.bin", generated(4096, 7));
        PreconditionFailedException e = assertThrows(PreconditionFailedException.class,
                () -> readRange("versions/weight_v000001/delta.bin", 0, 100, "\"0123456789abcdef0123456789abcdef\""));
        assertEquals("versions/weight_v000001/delta.bin", e.key());
    }

    @Test
    void rangedReadOfMissingKeyIsNoSuchFile() {
        assertThrows(NoSuchFileException.class, () -> readRange("versions/missing/delta.bin", 0, 10, null));
    }

    // ---- writes: writable stores ----

    @Test
    void createTwiceFailsThePreconditionAndKeepsTheFirst() throws IOException {
        assumeTrue(store.writable());
        ObjectInfo first = store.create("versions/weight_v000001/manifest.json", utf8("{\"a\":1}"), Map.of("owner", "one"));
        assertNotNull(first.etag());
        PreconditionFailedException e = assertThrows(PreconditionFailedException.class,
                () -> store.create("versions/weight_v000001/manifest.json", utf8("{\"a\":2}"), Map.of("owner", "two")));
        assertEquals("versions/weight_v000001/manifest.json", e.key());
        assertTrue(e.getMessage().contains("versions/weight_v000001/manifest.json"), e.getMessage());
        StoredDocument doc = store.read("versions/weight_v000001/manifest.json", null, 1 << 20);
        assertArrayEquals(utf8("{\"a\":1}"), doc.bytes());
        assertEquals(first.etag(), doc.etag());
    }

    @Test
    void createStoresUserMetadataThatStatReturns() throws IOException {
        assumeTrue(store.writable());
        store.create("versions/weight_v000002/manifest.json", utf8("{}"), Map.of("stitch-writer", "trainer-7"));
        ObjectInfo info = store.stat("versions/weight_v000002/manifest.json").orElseThrow();
        assertEquals("trainer-7", info.metadata().get("stitch-writer"));
        assertEquals(2, info.size());
        assertNotNull(info.lastModified());
    }

    @Test
    void createFromASmallFileIsOneObject() throws IOException {
        assumeTrue(store.writable());
        byte[] bytes = generated(100_000, 3);
        Path file = Files.write(tmp.resolve("small.bin"), bytes);
        ObjectInfo created = store.create("versions/weight_v000001/small.bin", file, Map.of());
        assertEquals(bytes.length, created.size());
        ObjectInfo info = store.stat("versions/weight_v000001/small.bin").orElseThrow();
        assertEquals(created.etag(), info.etag());
        assertArrayEquals(bytes, readRange("versions/weight_v000001/small.bin", 0, bytes.length, info.etag()));
    }

    @Test
    void createFromAnEmptyFileIsAnEmptyObject() throws IOException {
        assumeTrue(store.writable());
        Path file = Files.write(tmp.resolve("empty.bin"), new byte[0]);
        store.create("versions/weight_v000001/empty.bin", file, Map.of());
        assertEquals(0, store.stat("versions/weight_v000001/empty.bin").orElseThrow().size());
        assertEquals(0, store.read("versions/weight_v000001/empty.bin", null, 10).bytes().length);
    }

    @Test
    void largeCreateFromAFileGoesMultipartAndReadsBackWhole() throws IOException {
        assumeTrue(store.writable());
        byte[] bytes = large();
        Path file = Files.write(tmp.resolve("large.bin"), bytes);
        String key = "versions/weight_v000001/large.bin";
        ObjectInfo created = store.create(key, file, Map.of("stitch-writer", "w1"));
        ObjectInfo info = store.stat(key).orElseThrow();
        assertEquals(bytes.length, info.size());
        assertEquals(created.etag(), info.etag());
        assertEquals("w1", info.metadata().get("stitch-writer"));
        assertArrayEquals(bytes, readRange(key, 0, bytes.length, info.etag()));
        assertThrows(PreconditionFailedException.class, () -> store.create(key, file, Map.of("stitch-writer", "w2")));
        assertEquals(info.etag(), store.stat(key).orElseThrow().etag());
        assertEquals(List.of(), store.pendingUploads(""), "no upload may be left behind, completed or refused");
    }

    @Test
    void replaceWithTheCurrentEntityTagSwapsTheObject() throws IOException {
        assumeTrue(store.writable());
        ObjectInfo v1 = store.create("latest.json", utf8("{\"version\":1}"), Map.of());
        ObjectInfo v2 = store.replace("latest.json", utf8("{\"version\":2}"), v1.etag());
        assertNotEquals(v1.etag(), v2.etag());
        StoredDocument doc = store.read("latest.json", v1.etag(), 1 << 20);
        assertArrayEquals(utf8("{\"version\":2}"), doc.bytes());
        assertEquals(v2.etag(), doc.etag());
    }

    @Test
    void replaceWithAStaleEntityTagFailsThePrecondition() throws IOException {
        assumeTrue(store.writable());
        ObjectInfo v1 = store.create("latest.json", utf8("{\"version\":1}"), Map.of());
        store.replace("latest.json", utf8("{\"version\":2}"), v1.etag());
        PreconditionFailedException e = assertThrows(PreconditionFailedException.class,
                () -> store.replace("latest.json", utf8("{\"version\":3}"), v1.etag()));
        assertEquals("latest.json", e.key());
        assertArrayEquals(utf8("{\"version\":2}"), store.read("latest.json", null, 1 << 20).bytes());
    }

    @Test
    void replaceOfAMissingObjectFailsThePrecondition() {
        assumeTrue(store.writable());
        assertThrows(PreconditionFailedException.class,
                () -> store.replace("latest.json", utf8("{}"), "\"0123456789abcdef0123456789abcdef\""));
    }

    @Test
    void listReturnsTheKeysUnderAPrefixInOrder() throws IOException {
        assumeTrue(store.writable());
        for (String k : List.of("versions/weight_v000002/manifest.json", "versions/weight_v000001/manifest.json",
                "versions/weight_v000001/delta.bin", "latest.json", "versionsX/other.json")) {
            store.create(k, utf8(k), Map.of());
        }
        assertEquals(List.of("versions/weight_v000001/delta.bin", "versions/weight_v000001/manifest.json",
                "versions/weight_v000002/manifest.json"), store.list("versions/").stream().map(ObjectInfo::key).toList());
        List<ObjectInfo> all = store.list("");
        assertEquals(List.of("latest.json", "versions/weight_v000001/delta.bin", "versions/weight_v000001/manifest.json",
                "versions/weight_v000002/manifest.json", "versionsX/other.json"), all.stream().map(ObjectInfo::key).toList());
        assertEquals("latest.json".length(), all.getFirst().size());
        assertNotNull(all.getFirst().etag());
    }

    @Test
    void deleteRemovesTheObjectAndToleratesAMissingOne() throws IOException {
        assumeTrue(store.writable());
        store.create("versions/weight_v000001/delta.bin", generated(10, 1), Map.of());
        store.delete("versions/weight_v000001/delta.bin");
        assertEquals(Optional.empty(), store.stat("versions/weight_v000001/delta.bin"));
        assertEquals(List.of(), store.list("versions/"));
        store.delete("versions/weight_v000001/delta.bin");
        store.create("versions/weight_v000001/delta.bin", generated(10, 2), Map.of());
        assertArrayEquals(generated(10, 2), store.read("versions/weight_v000001/delta.bin", null, 100).bytes());
    }
}
