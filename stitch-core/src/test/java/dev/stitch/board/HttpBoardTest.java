package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.store.StoreOptions;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.testing.DirectoryHttpServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A board served over plain HTTP from a directory and read through the verified cache
 * (docs/protocol/board.md §7.4, §7.5): pointer polls answered 304, parallel ranged fetches checked
 * while they stream, retries, resumes, and corrupt objects refused before anything lands in the cache.
 */
class HttpBoardTest {
    private static final int PART = StoreOptions.MIN_PART_BYTES;

    @TempDir
    Path tmp;
    private Path boardDir;
    private DirectoryHttpServer server;
    private byte[] big;

    @BeforeEach
    void publishTwoVersions() throws IOException {
        boardDir = tmp.resolve("board");
        FilesystemBulletinBoard fs = FilesystemBulletinBoard.create(boardDir, "run-a", BoardOptions.defaults());
        big = new byte[4 * PART + 12345];
        new Random(7).nextBytes(big);
        for (long v = 1; v <= 2; v++) {
            try (VersionPublication pub = fs.beginPublish("run-a", v)) {
                long version = v;
                pub.writeArtifact("delta-00000.bin", ArtifactKind.TRANSITION, out -> {
                    out.write(big);
                    out.write((int) version);
                });
                pub.commit(ManifestFields.of("stitch_delta", "auto"));
            }
        }
        server = DirectoryHttpServer.serve(boardDir);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private RemoteBulletinBoard open(String cache, StoreOptions store) throws IOException {
        BoardAddress address = BoardAddress.parse(server.uri().toString());
        return RemoteBulletinBoard.open(address, BoardOptions.defaults(),
                RemoteBoardOptions.defaults(address).withCacheDir(tmp.resolve(cache)).withStore(store));
    }

    private static StoreOptions fast() {
        return StoreOptions.defaults().withPartBytes(PART).withConcurrency(3)
                .withBackoff(Duration.ofMillis(1), Duration.ofMillis(5));
    }

    @Test
    void readsThePointerManifestAndArtifactsIntoTheCache() throws IOException {
        try (RemoteBulletinBoard board = open("cache", fast())) {
            LatestPointer p = board.readLatest();
            assertEquals(2, p.version());
            assertEquals("run-a", p.runId());
            assertEquals(p, board.readLatest());
            assertEquals(1, board.stats().pollsNotModified(), "the second poll is a 304");
            Manifest m = board.readManifest(2);
            assertEquals(FilesystemBulletinBoard.open(boardDir).readManifest(2), m);
            VerificationReport r = board.verifyArtifacts(m, true);
            assertEquals(1, r.artifactsVerified());
            Path cached = board.versionDirectory(2).resolve("delta-00000.bin");
            assertArrayEquals(Files.readAllBytes(boardDir.resolve("versions/weight_v000002/delta-00000.bin")),
                    Files.readAllBytes(cached));
            assertTrue(board.stats().bytesReceived() >= big.length);
            long received = board.stats().bytesReceived();
            board.verifyArtifacts(m, true);
            assertTrue(board.stats().bytesReceived() - received < 1024, "a cached, verified file is not fetched again");
        }
    }

    @Test
    void retriesServerErrorsAndBodiesThatEndEarly() throws IOException {
        try (RemoteBulletinBoard board = open("cache", fast())) {
            server.failNext(2, 503);
            assertEquals(2, board.readLatest().version());
            Manifest m = board.readManifest(2);
            server.truncateNext(2, 1000);
            board.verifyArtifacts(m, true);
            assertTrue(board.stats().retries() >= 4, "retries seen: " + board.stats().retries());
            assertArrayEquals(Files.readAllBytes(boardDir.resolve("versions/weight_v000002/delta-00000.bin")),
                    Files.readAllBytes(board.versionDirectory(2).resolve("delta-00000.bin")));
        }
    }

    @Test
    void aFlippedByteOnTheServerIsRefusedAndNothingLandsInTheCache() throws IOException {
        Path served = boardDir.resolve("versions/weight_v000002/delta-00000.bin");
        byte[] bytes = Files.readAllBytes(served);
        bytes[3 * PART + 17] ^= 0x01;
        Files.write(served, bytes);
        try (RemoteBulletinBoard board = open("cache", fast())) {
            Manifest m = board.readManifest(2);
            ArtifactVerificationException e = assertThrows(ArtifactVerificationException.class,
                    () -> board.verifyArtifacts(m, true));
            assertTrue(e.getMessage().contains("digest mismatch"), e.getMessage());
            assertEquals(1, board.stats().verificationFailures());
            try (Stream<Path> left = Files.list(board.versionDirectory(2))) {
                assertEquals(1, left.count(), "only the manifest is cached");
            }
        }
    }

    @Test
    void aFailedFetchResumesAfterItsVerifiedPrefix() throws IOException {
        StoreOptions once = fast().withAttempts(1).withConcurrency(1);
        try (RemoteBulletinBoard board = open("cache", once)) {
            Manifest m = board.readManifest(2);
            // With one part in flight, the third range's body is cut short; with one attempt the fetch fails.
            server.truncateBody(3, 100);
            assertThrows(IOException.class, () -> board.verifyArtifacts(m, true));
            assertTrue(Files.exists(board.versionDirectory(2).resolve("delta-00000.bin" + ArtifactFetcher.PART_SUFFIX)));
            assertFalse(Files.exists(board.versionDirectory(2).resolve("delta-00000.bin")));
            long receivedBefore = board.stats().bytesReceived();
            board.verifyArtifacts(m, true);
            assertEquals(1, board.stats().resumedFiles());
            assertTrue(board.stats().bytesReceived() - receivedBefore < big.length - PART,
                    "the resumed fetch skipped the verified prefix");
            assertArrayEquals(Files.readAllBytes(boardDir.resolve("versions/weight_v000002/delta-00000.bin")),
                    Files.readAllBytes(board.versionDirectory(2).resolve("delta-00000.bin")));
        }
    }

    @Test
    void filesOfAVersionThePointerNamesThatAreNotThereYetHaveNotArrived() throws IOException {
        Path served = boardDir.resolve("versions/weight_v000002");
        Path held = Files.move(served, tmp.resolve("held"));
        // A directory board wrote the version before its pointer: a missing manifest there is damage.
        assertFalse(assertThrows(IOException.class, () -> FilesystemBulletinBoard.open(boardDir).readLatest())
                instanceof VersionNotArrivedException);
        try (RemoteBulletinBoard board = open("cache", fast())) {
            VersionNotArrivedException pointer = assertThrows(VersionNotArrivedException.class, board::readLatest);
            assertEquals(2, pointer.version());
            assertEquals("versions/weight_v000002/manifest.json", pointer.missingFile());
            VersionNotArrivedException manifest = assertThrows(VersionNotArrivedException.class, () -> board.readManifest(2));
            assertEquals(2, manifest.pointerVersion());
            NoSuchFileException unpublished = assertThrows(NoSuchFileException.class, () -> board.readManifest(3));
            assertFalse(unpublished instanceof VersionNotArrivedException, "version 3 is above the pointer");

            Files.createDirectories(served);
            Files.copy(held.resolve("manifest.json"), served.resolve("manifest.json"));
            assertEquals(2, board.readLatest().version());
            Manifest m = board.readManifest(2);
            VersionNotArrivedException artifact = assertThrows(VersionNotArrivedException.class,
                    () -> board.verifyArtifacts(m, true));
            assertEquals("versions/weight_v000002/delta-00000.bin", artifact.missingFile());

            Files.copy(held.resolve("delta-00000.bin"), served.resolve("delta-00000.bin"));
            assertEquals(1, board.verifyArtifacts(m, true).artifactsVerified());
        }
    }

    @Test
    void anHttpBoardIsReadOnly() throws IOException {
        try (RemoteBulletinBoard board = open("cache", fast())) {
            IOException e = assertThrows(IOException.class, () -> board.beginPublish("run-a", 3));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
        }
        IOException e = assertThrows(IOException.class, () -> PublishingBoard.open(BoardAddress.parse(server.uri().toString()),
                BoardOptions.defaults(), RemoteBoardOptions.defaults(BoardAddress.parse(server.uri().toString()))));
        assertTrue(e.getMessage().contains("read-only"), e.getMessage());
    }

    @Test
    void aMissingPointerIsTheEmptyBoard() throws IOException {
        Files.delete(boardDir.resolve("latest.json"));
        try (RemoteBulletinBoard board = open("cache", fast())) {
            assertEquals(LatestPointer.EMPTY, board.readLatest());
        }
    }

    @Test
    void boardAddressesParse() {
        assertFalse(BoardAddress.parse("/var/board").isRemote());
        assertFalse(BoardAddress.parse("file:///var/board").isRemote());
        assertEquals(Path.of("/var/board"), BoardAddress.parse("file:///var/board").path());
        assertTrue(BoardAddress.parse("s3://bucket/prefix").isWritable());
        assertFalse(BoardAddress.parse("https://cache.dc-b/board/").isWritable());
        assertThrows(IllegalArgumentException.class, () -> BoardAddress.parse("ftp://x/y"));
        assertThrows(IllegalArgumentException.class, () -> BoardAddress.parse("s3:///nobucket"));
        assertThrows(IllegalArgumentException.class, () -> BoardAddress.parse("http://h/p?x=1"));
    }
}
