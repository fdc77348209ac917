package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reader hardening (docs/protocol/board.md §1.6): links out of the board, unknown artifact kinds, crash leftovers. */
class HostileBoardTest {
    @TempDir
    Path tmp;

    private FilesystemBulletinBoard boardWithTwoVersions() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", BoardOptions.defaults());
        FilesystemBulletinBoardTest.publish(b, "run-a", 1, "one");
        FilesystemBulletinBoardTest.publish(b, "run-a", 2, "two");
        return b;
    }

    /** Moves {@code entry} out of the board and leaves a symbolic link to it in its place. */
    private Path replaceWithLink(Path entry) throws IOException {
        Path outside = tmp.resolve("outside").resolve(entry.getFileName());
        Files.createDirectories(outside.getParent());
        Files.move(entry, outside);
        Files.createSymbolicLink(entry, outside);
        return outside;
    }

    @Test
    void symlinkedVersionDirectoryIsRefused() throws IOException {
        FilesystemBulletinBoard b = boardWithTwoVersions();
        Manifest before = b.readManifest(2);
        replaceWithLink(b.versionDirectory(2));
        BoardLinkException e = assertThrows(BoardLinkException.class, () -> b.readManifest(2));
        assertEquals("versions/weight_v000002/manifest.json", e.path());
        assertEquals("versions/weight_v000002", e.link());
        assertTrue(e.getMessage().contains("versions/weight_v000002 is a symbolic link"), e.getMessage());
        // The pointer's manifest_checksum check reads version 2's manifest through the same guard.
        assertThrows(BoardLinkException.class, b::readLatest);
        ArtifactVerificationException v = assertThrows(ArtifactVerificationException.class,
                () -> b.verifyArtifacts(before, true));
        assertTrue(v.problem().contains("symbolic link versions/weight_v000002"), v.problem());
        assertEquals(1, b.readManifest(1).version(), "other versions stay readable");
    }

    @Test
    void symlinkedManifestAndPointerAreRefused() throws IOException {
        FilesystemBulletinBoard b = boardWithTwoVersions();
        replaceWithLink(b.versionDirectory(1).resolve(Manifest.FILE_NAME));
        BoardLinkException m = assertThrows(BoardLinkException.class, () -> b.readManifest(1));
        assertEquals("versions/weight_v000001/manifest.json", m.path());
        assertEquals(m.path(), m.link());

        replaceWithLink(b.root().resolve(LatestPointer.FILE_NAME));
        BoardLinkException p = assertThrows(BoardLinkException.class, b::readLatest);
        assertEquals(LatestPointer.FILE_NAME, p.path());
        assertThrows(BoardLinkException.class, b::readLatestUnchecked);
        assertThrows(BoardLinkException.class, () -> b.beginPublish("run-a", 3), "a writer does not follow it either");
    }

    @Test
    void symlinkedVersionsDirectoryIsRefused() throws IOException {
        FilesystemBulletinBoard b = boardWithTwoVersions();
        replaceWithLink(b.root().resolve(FilesystemBulletinBoard.VERSIONS_DIR));
        BoardLinkException e = assertThrows(BoardLinkException.class, () -> b.readManifest(1));
        assertEquals("versions", e.link());
    }

    @Test
    void aBoardRootReachedThroughALinkIsFine() throws IOException {
        FilesystemBulletinBoard real = boardWithTwoVersions();
        Path alias = tmp.resolve("alias");
        Files.createSymbolicLink(alias, real.root());
        FilesystemBulletinBoard b = FilesystemBulletinBoard.open(alias);
        assertEquals(2, b.readLatest().version());
        b.verifyArtifacts(b.readManifest(2), true);
    }

    @Test
    void symlinkedArtifactDirectoryIsRefused() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", BoardOptions.defaults());
        FilesystemBulletinBoardTest.publishAnchor(b, "run-a", 1);
        Manifest m = b.readManifest(1);
        replaceWithLink(b.versionDirectory(1).resolve("full"));
        ArtifactVerificationException e = assertThrows(ArtifactVerificationException.class, () -> b.verifyArtifacts(m, true));
        assertEquals("versions/weight_v000001/full/model.safetensors", e.file());
        assertTrue(e.problem().contains("versions/weight_v000001/full"), e.problem());
    }

    @Test
    void gcRemovesALinkedVersionWithoutTouchingItsTarget() throws IOException {
        GcTest.ManualClock clock = new GcTest.ManualClock();
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a",
                BoardOptions.defaults().withClock(clock));
        FilesystemBulletinBoardTest.publish(b, "run-a", 1, "one");
        FilesystemBulletinBoardTest.publishAnchor(b, "run-a", 2);
        FilesystemBulletinBoardTest.publish(b, "run-a", 3, "three");
        Path outside = replaceWithLink(b.versionDirectory(1));
        clock.advanceSeconds(10_000);
        b.gc(0, 0);
        assertFalse(Files.exists(b.versionDirectory(1), java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.exists(outside.resolve(Manifest.FILE_NAME)), "the link's target is not the board's to delete");
    }

    @Test
    void unknownArtifactKindsAreIgnored() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), null, BoardOptions.defaults());
        Path dir = b.versionDirectory(1);
        Files.createDirectories(dir);
        byte[] payload = "delta".getBytes(StandardCharsets.UTF_8);
        Files.write(dir.resolve("delta-00000.stdelta"), payload);
        List<Artifact> artifacts = new ArrayList<>();
        artifacts.add(Artifact.of(ArtifactKind.TRANSITION, "delta-00000.stdelta", payload.length, Xxh3.hash128(payload)));
        // Listed but absent, and with a digest that matches nothing: a later writer's signature file, say.
        artifacts.add(new Artifact("signature_v9", "sig/delta.sig", 7L, "xxh3-128:" + "0".repeat(32), null));
        Manifest m = new Manifest(1, 0, "stitch_delta", "auto", List.of("delta-00000.stdelta"), artifacts, 1.0, null, null,
                null, List.of(), null, null, null, null);
        Files.write(dir.resolve(Manifest.FILE_NAME), m.toBytes());
        Files.write(b.root().resolve(LatestPointer.FILE_NAME), new LatestPointer(null, 1, 1.0, null).toBytes());

        Manifest read = b.readManifest(1);
        assertEquals(2, read.artifacts().size(), "unknown kinds are kept");
        VerificationReport r = b.verifyArtifacts(read, true);
        assertEquals(1, r.artifactsVerified(), "only the known kind is verified");
        assertEquals(payload.length, r.bytesVerified());
    }

    @Test
    void gcCollectsCrashLeftoversOlderThanTheLeftoverAge() throws IOException {
        GcTest.ManualClock clock = new GcTest.ManualClock();
        BoardOptions options = BoardOptions.defaults().withClock(clock);
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", options);
        FilesystemBulletinBoardTest.publish(b, "run-a", 1, "one");
        Path root = b.root();
        Files.writeString(root.resolve(".latest.json.0123456789abcdef.tmp"), "{");
        Files.writeString(b.versionDirectory(1).resolve(".delta-00001.stdelta.0123456789abcdef.tmp"), "partial");
        Files.createDirectory(root.resolve("versions/.weight_v000002.0123456789abcdef.staging"));

        // A young leftover may belong to a writer at work: the default age (the orphan grace) keeps it.
        GcReport young = b.gc(10, 600);
        assertEquals(List.of(), young.removedPaths());

        clock.advanceSeconds(120);
        FilesystemBulletinBoard quick = FilesystemBulletinBoard.open(root, options.withOrphanGrace(Duration.ofSeconds(60)));
        GcReport r = quick.gc(10, 600);
        assertEquals(List.of(".latest.json.0123456789abcdef.tmp", "versions/.weight_v000002.0123456789abcdef.staging",
                "versions/weight_v000001/.delta-00001.stdelta.0123456789abcdef.tmp"), r.removedPaths().stream().sorted().toList());
        assertEquals(List.of(), quick.leftovers());
        b.verifyArtifacts(b.readManifest(1), true);
    }

    @Test
    void gcBreaksAndRemovesAStaleLock() throws IOException {
        GcTest.ManualClock clock = new GcTest.ManualClock();
        BoardOptions options = BoardOptions.defaults().withClock(clock);
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", options);
        Path root = b.root();
        double longAgo = clock.millis() / 1000.0 - 10_000;
        Files.writeString(root.resolve(BoardLock.FILE_NAME), "{\"acquired_at\": " + longAgo
                + ", \"host\": \"elsewhere\", \"owner\": \"crashed\", \"pid\": 1, \"token\": \"t\"}");
        GcReport r = b.gc(10, 600);
        assertTrue(r.removedPaths().contains(BoardLock.FILE_NAME), r.removedPaths().toString());
        try (Stream<Path> s = Files.list(root)) {
            assertEquals(List.of(), s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(BoardLock.FILE_NAME)).toList());
        }
    }

    @Test
    void gcLeavesALiveLockAlone() throws IOException {
        BoardOptions options = BoardOptions.defaults().withLockTimeout(Duration.ofMillis(200));
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-a", options);
        try (BoardLock held = BoardLock.acquire(b.root(), options)) {
            assertThrows(BoardLockedException.class, () -> b.gc(10, 600));
            assertTrue(Files.exists(b.root().resolve(BoardLock.FILE_NAME)));
        }
        assertThrows(NoSuchFileException.class, () -> Files.readAllBytes(b.root().resolve(BoardLock.FILE_NAME)));
    }
}
