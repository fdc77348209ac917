package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link BoardRepair}: a broken latest version is moved aside without the pointer going back. */
class BoardRepairTest {
    @TempDir
    Path tmp;

    private FilesystemBulletinBoard board() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp, "run-a", BoardOptions.defaults());
        FilesystemBulletinBoardTest.publish(b, "run-a", 1, "one");
        FilesystemBulletinBoardTest.publish(b, "run-a", 2, "two");
        return b;
    }

    private List<String> tree() throws IOException {
        try (Stream<Path> s = Files.walk(tmp)) {
            return s.map(p -> tmp.relativize(p).toString()).sorted().toList();
        }
    }

    @Test
    void aHealthyBoardIsLeftAlone() throws IOException {
        FilesystemBulletinBoard b = board();
        byte[] pointer = Files.readAllBytes(tmp.resolve(LatestPointer.FILE_NAME));
        List<String> before = tree();
        BoardRepair.Report r = BoardRepair.repair(b, false);
        assertNull(r.problem());
        assertFalse(r.changed());
        assertEquals(before, tree());
        assertArrayEquals(pointer, Files.readAllBytes(tmp.resolve(LatestPointer.FILE_NAME)));
    }

    @Test
    void aCorruptLatestManifestIsMovedAsideAndPublishingResumes() throws IOException {
        FilesystemBulletinBoard b = board();
        Path manifest = b.versionDirectory(2).resolve(Manifest.FILE_NAME);
        byte[] m = Files.readAllBytes(manifest);
        Files.write(manifest, Arrays.copyOf(m, m.length / 2));
        assertThrows(ProtocolException.class, b::readLatest);
        assertThrows(ProtocolException.class, () -> b.beginPublish("run-a", 3), "the board is wedged");

        List<String> before = tree();
        BoardRepair.Report dry = BoardRepair.repair(b, true);
        assertNotNull(dry.problem());
        assertTrue(dry.problem().contains("versions/weight_v000002/manifest.json"), dry.problem());
        assertEquals("versions/weight_v000002", dry.movedAside());
        assertTrue(dry.pointerRewritten());
        assertFalse(dry.changed(), "a dry run changes nothing");
        assertEquals(before, tree());

        BoardRepair.Report r = BoardRepair.repair(b, false);
        assertTrue(r.changed());
        assertTrue(r.movedTo().startsWith("versions/.weight_v000002.") && r.movedTo().endsWith(".broken"), r.movedTo());
        LatestPointer p = b.readLatest();
        assertEquals(2, p.version(), "the pointer never goes back");
        assertEquals("run-a", p.runId());
        assertNull(p.manifestChecksum());
        assertThrows(NoSuchFileException.class, () -> b.readManifest(2), "readers see version 2 as gone");
        assertTrue(b.leftovers().contains(r.movedTo()));

        FilesystemBulletinBoardTest.publishAnchor(b, "run-a", 3);
        assertEquals(3, b.readLatest().version());
        BoardRepair.Report after = BoardRepair.repair(b, false);
        assertNull(after.problem(), "repaired and published on: healthy");
    }

    @Test
    void aMissingManifestUnderAPointerWithoutChecksumNeedsNothingMore() throws IOException {
        FilesystemBulletinBoard b = board();
        BoardRepair.repair(b, false);
        assertNull(BoardRepair.repair(b, false).problem());
        Files.write(tmp.resolve(LatestPointer.FILE_NAME), new LatestPointer("run-a", 7, 1.0, null).toBytes());
        BoardRepair.Report r = BoardRepair.repair(b, false);
        assertNotNull(r.problem());
        assertNull(r.movedAside());
        assertFalse(r.pointerRewritten());
        assertFalse(r.changed(), "publishers are not blocked: nothing to do");
    }

    @Test
    void aCorruptArtifactOrALinkedLatestVersionIsMovedAside() throws IOException {
        FilesystemBulletinBoard b = board();
        Files.writeString(b.versionDirectory(2).resolve("delta-00000.stdelta"), "evil");
        BoardRepair.Report r = BoardRepair.repair(b, false);
        assertTrue(r.problem().contains("versions/weight_v000002/delta-00000.stdelta"), r.problem());
        assertTrue(r.changed());

        FilesystemBulletinBoardTest.publish(b, "run-a", 3, "three");
        Path dir = b.versionDirectory(3);
        Path outside = tmp.resolveSibling(tmp.getFileName() + "-outside");
        Files.move(dir, outside);
        Files.createSymbolicLink(dir, outside);
        BoardRepair.Report linked = BoardRepair.repair(b, false);
        assertTrue(linked.problem().contains("symbolic link"), linked.problem());
        assertFalse(Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertTrue(Files.exists(outside.resolve(Manifest.FILE_NAME)), "the link moved, not its target");
        assertEquals(3, b.readLatest().version());
    }

    @Test
    void anUnreadablePointerIsNotGuessedAt() throws IOException {
        FilesystemBulletinBoard b = board();
        Files.writeString(tmp.resolve(LatestPointer.FILE_NAME), "{not json");
        List<String> before = tree();
        IOException e = assertThrows(IOException.class, () -> BoardRepair.repair(b, false));
        assertTrue(e.getMessage().contains(LatestPointer.FILE_NAME), e.getMessage());
        assertEquals(before, tree());
    }
}
