package dev.stitch.s3;

import static dev.stitch.s3.S3Boards.BIG;
import static dev.stitch.s3.S3Boards.MULTIPART_BYTES;
import static dev.stitch.s3.S3Boards.PART;
import static dev.stitch.s3.S3Boards.RUN;
import static dev.stitch.s3.S3Boards.key;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.GcReport;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.VerificationReport;
import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.s3.testing.S3ProxyProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A stitch board on S3 (docs/protocol/board.md §7) end to end against s3proxy: what one board
 * instance publishes, another reads and verifies through its own cache; the objects under the prefix
 * are exactly a file-system board's files, in both directions, manifest bytes included; a corrupted
 * object is refused before it reaches the cache; and gc keeps the newest anchor and what follows it.
 */
class S3BoardTest {
    private static final String BUCKET = "boards";

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

    private RemoteBulletinBoard open(String prefix, String cache) throws IOException {
        return RemoteBulletinBoard.open(S3Boards.address(BUCKET, prefix), BoardOptions.defaults(),
                S3Boards.remote(tmp.resolve(cache), S3Boards.store(s3proxy.endpoint())));
    }

    private RemoteBulletinBoard create(String prefix, String cache) throws IOException {
        return S3Boards.create(S3Boards.address(BUCKET, prefix), BoardOptions.defaults(),
                S3Boards.remote(tmp.resolve(cache), S3Boards.store(s3proxy.endpoint())));
    }

    /** Three versions; the second one's payload is three parts, the others fit in a single PUT. */
    private static Map<Long, Map<String, byte[]>> threeVersions() {
        Map<Long, Map<String, byte[]>> versions = new LinkedHashMap<>();
        versions.put(1L, S3Boards.delta(1, 300_000));
        versions.put(2L, S3Boards.delta(2, MULTIPART_BYTES));
        versions.put(3L, S3Boards.delta(3, 1_000));
        return versions;
    }

    /** Publishes {@code versions} to {@code prefix}; returns the committed manifests. */
    private Map<Long, Manifest> publishAll(String prefix, Map<Long, Map<String, byte[]>> versions) throws IOException {
        Map<Long, Manifest> published = new LinkedHashMap<>();
        try (RemoteBulletinBoard writer = create(prefix, "writer-cache-" + prefix)) {
            for (var v : versions.entrySet()) {
                published.put(v.getKey(), S3Boards.publish(writer, v.getKey(), v.getValue()));
            }
        }
        return published;
    }

    @Test
    void versionsPublishedByOneBoardAreReadAndVerifiedThroughAnotherBoardsCache() throws IOException {
        Map<Long, Map<String, byte[]>> versions = threeVersions();
        Map<Long, Manifest> published = publishAll("round-trip", versions);
        try (RemoteBulletinBoard reader = open("round-trip", "reader-cache")) {
            LatestPointer p = reader.readLatest();
            assertEquals(3, p.version());
            assertEquals(RUN, p.runId());
            assertEquals(S3Boards.checksumOf(published.get(3L)), p.manifestChecksum());
            for (var v : versions.entrySet()) {
                Manifest m = reader.readManifest(v.getKey(), p);
                assertEquals(published.get(v.getKey()), m);
                VerificationReport r = reader.verifyArtifacts(m, true);
                assertEquals(v.getValue().size(), r.artifactsVerified());
                for (Artifact a : m.artifacts()) {
                    assertArrayEquals(v.getValue().get(a.path()), Files.readAllBytes(reader.artifactPath(v.getKey(), a)), a.path());
                }
            }
            long total = versions.values().stream().flatMap(f -> f.values().stream()).mapToLong(b -> b.length).sum();
            assertTrue(reader.stats().bytesReceived() >= total, reader.stats().bytesReceived() + " < " + total);
        }
    }

    @Test
    void theObjectsOfAnS3BoardDownloadedIntoADirectoryAreAFilesystemBoard() throws IOException {
        Map<Long, Map<String, byte[]>> versions = threeVersions();
        Map<Long, Manifest> published = publishAll("s3-to-dir", versions);
        Path dir = tmp.resolve("downloaded");
        try (RemoteBulletinBoard board = open("s3-to-dir", "download-cache")) {
            ObjectStore store = board.store();
            for (ObjectInfo o : store.list("")) {
                Path file = dir.resolve(o.key());
                Files.createDirectories(file.getParent());
                Files.write(file, S3Boards.readObject(store, o.key()));
            }
        }
        FilesystemBulletinBoard fs = FilesystemBulletinBoard.open(dir);
        // readLatest checks the pointer's manifest_checksum against the downloaded manifest's bytes
        LatestPointer p = fs.readLatest();
        assertEquals(new LatestPointer(RUN, 3, p.updatedAt(), S3Boards.checksumOf(published.get(3L))), p);
        for (var v : versions.entrySet()) {
            long version = v.getKey();
            assertArrayEquals(published.get(version).toBytes(), Files.readAllBytes(fs.versionDirectory(version).resolve(Manifest.FILE_NAME)));
            Manifest m = fs.readManifest(version, p);
            assertEquals(v.getValue().size(), fs.verifyArtifacts(m, true).artifactsVerified());
            for (Artifact a : m.artifacts()) {
                assertArrayEquals(v.getValue().get(a.path()), Files.readAllBytes(fs.artifactPath(version, a)), a.path());
            }
        }
        // nothing but the pointer and the versions' files: no claim or other publishing residue is left behind
        assertEquals(1 + versions.values().stream().mapToInt(f -> f.size() + 1).sum(), S3Boards.filesUnder(dir).size());
    }

    @Test
    void aFilesystemBoardUploadedToS3IsReadAndVerifiedRemotely() throws IOException {
        Map<Long, Map<String, byte[]>> versions = threeVersions();
        Path dir = tmp.resolve("fs-board");
        FilesystemBulletinBoard fs = FilesystemBulletinBoard.create(dir, RUN, BoardOptions.defaults());
        for (var v : versions.entrySet()) {
            S3Boards.publish(fs, v.getKey(), v.getValue());
        }
        try (RemoteBulletinBoard board = open("dir-to-s3", "upload-cache")) {
            for (var f : S3Boards.filesUnder(dir).entrySet()) {
                board.store().create(f.getKey(), f.getValue(), Map.of());
            }
        }
        try (RemoteBulletinBoard remote = open("dir-to-s3", "reader-cache")) {
            LatestPointer p = remote.readLatest();
            assertEquals(fs.readLatest(), p);
            for (var v : versions.entrySet()) {
                long version = v.getKey();
                Manifest m = remote.readManifest(version, p);
                assertEquals(fs.readManifest(version), m);
                assertEquals(v.getValue().size(), remote.verifyArtifacts(m, true).artifactsVerified());
                assertArrayEquals(Files.readAllBytes(fs.versionDirectory(version).resolve(Manifest.FILE_NAME)),
                        Files.readAllBytes(remote.versionDirectory(version).resolve(Manifest.FILE_NAME)));
                for (Artifact a : m.artifacts()) {
                    assertArrayEquals(Files.readAllBytes(fs.artifactPath(version, a)), Files.readAllBytes(remote.artifactPath(version, a)));
                }
            }
        }
    }

    @Test
    void aFlippedByteInAStoredObjectIsRefusedAndNothingLandsInTheCache() throws IOException {
        publishAll("flipped", Map.of(1L, S3Boards.delta(1, MULTIPART_BYTES)));
        String key = key(1, BIG);
        byte[] bytes;
        try (RemoteBulletinBoard board = open("flipped", "raw-cache")) {
            bytes = S3Boards.readObject(board.store(), key);
        }
        bytes[PART + 4242] ^= 0x10;
        // A plain PutObject without conditions, as a bad disk or a careless operator would leave it.
        try (S3Client s3 = s3proxy.client()) {
            s3.putObject(b -> b.bucket(BUCKET).key("flipped/" + key), RequestBody.fromBytes(bytes));
        }
        try (RemoteBulletinBoard reader = open("flipped", "reader-cache")) {
            Manifest m = reader.readManifest(1);
            ArtifactVerificationException e = assertThrows(ArtifactVerificationException.class, () -> reader.verifyArtifacts(m, true));
            assertEquals(key, e.file());
            assertTrue(e.getMessage().contains("digest mismatch"), e.getMessage());
            assertEquals(1, reader.stats().verificationFailures());
            Path cached = reader.versionDirectory(1).resolve(BIG);
            assertFalse(Files.exists(cached), "an unverified file under its final name");
            try (Stream<Path> left = Files.list(reader.versionDirectory(1))) {
                assertEquals(List.of(Manifest.FILE_NAME), left.map(f -> f.getFileName().toString()).toList(),
                        "the refused bytes are not kept, not even as a partial file");
            }
        }
    }

    @Test
    void gcDeletesTheVersionsBelowTheNewestAnchorAndKeepsTheAnchorAndWhatFollows() throws IOException {
        Map<Long, Map<String, byte[]>> versions = new LinkedHashMap<>();
        for (long v = 1; v <= 6; v++) {
            Map<String, byte[]> files = S3Boards.delta(v, 2_000);
            if (v == 4) {
                files.put("full/model-00001-of-00001.safetensors", S3Boards.bytes(4000, 50_000));
            }
            versions.put(v, files);
        }
        publishAll("gc", versions);
        try (RemoteBulletinBoard board = open("gc", "gc-cache")) {
            assertTrue(board.readManifest(4).isAnchor());
            assertFalse(board.readManifest(5).isAnchor());
            assertFalse(board.readManifest(3).isAnchor());
            GcReport r = board.gc(1, 0);
            assertEquals(4, r.anchor());
            assertEquals(List.of(1L, 2L, 3L), r.deletedVersions());
            for (long v = 1; v <= 6; v++) {
                long version = v;
                List<String> keys = board.store().list(key(v, "")).stream().map(ObjectInfo::key).sorted().toList();
                List<String> expected = v < 4 ? List.of() : Stream.concat(versions.get(v).keySet().stream(),
                        Stream.of(Manifest.FILE_NAME)).map(f -> key(version, f)).sorted().toList();
                assertEquals(expected, keys, "version " + v);
            }
        }
        try (RemoteBulletinBoard reader = open("gc", "after-gc-cache")) {
            LatestPointer p = reader.readLatest();
            assertEquals(6, p.version());
            assertEquals(4, reader.newestAnchorAtOrBelow(6).orElseThrow());
            for (long v = 4; v <= 6; v++) {
                Manifest m = reader.readManifest(v, p);
                assertEquals(versions.get(v).size(), reader.verifyArtifacts(m, true).artifactsVerified());
            }
            for (long v = 1; v <= 3; v++) {
                long version = v;
                assertThrows(NoSuchFileException.class, () -> reader.readManifest(version));
            }
        }
    }
}
