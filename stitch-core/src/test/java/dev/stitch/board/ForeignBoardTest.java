package dev.stitch.board;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Read-only foreign layouts (docs/protocol/board.md §3) built from the real slime disk_delta versions of the fixtures. */
class ForeignBoardTest {
    @TempDir
    Path tmp;

    private void copyXorVersions(Path into) throws IOException {
        for (int v = 1; v <= 2; v++) {
            BoardFixtures.copyTree(Fixtures.path("disk-v2/xor/weight_v00000" + v), into.resolve("weight_v00000" + v));
        }
    }

    @Test
    void slimeLayoutWithRun() throws IOException {
        copyXorVersions(tmp.resolve("run-a"));
        Files.writeString(tmp.resolve("latest"), "run-a/weight_v000002");
        BulletinBoard board = BulletinBoard.open(tmp, BoardLayout.SLIME, BoardOptions.defaults());
        assertEquals(BoardLayout.SLIME, board.layout());
        LatestPointer p = board.readLatest();
        assertEquals("run-a", p.runId());
        assertEquals(2, p.version());
        assertEquals(tmp.resolve("run-a/weight_v000002"), board.versionDirectory(2));
        Manifest m2 = board.readManifest(2, p);
        assertEquals(1, m2.baseVersion());
        assertEquals("disk_delta", m2.backend());
        assertEquals("run-a", m2.runId());
        assertEquals(List.of("model-00000-of-00001.safetensors"), m2.transitionFiles());
        assertEquals(1, board.verifyArtifacts(m2, false).unverified());
        assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(m2, true));
        assertEquals(0, board.readManifest(1).baseVersion());
        assertEquals(OptionalLong.empty(), board.newestAnchorAtOrBelow(2));
        assertThrows(NoSuchFileException.class, () -> board.readManifest(3));
    }

    @Test
    void slimeLayoutRunlessAndPointerErrors() throws IOException {
        copyXorVersions(tmp);
        BulletinBoard board = BulletinBoard.open(tmp, BoardLayout.SLIME, BoardOptions.defaults());
        assertEquals(LatestPointer.EMPTY, board.readLatest());
        Files.writeString(tmp.resolve("latest"), "000002\n");
        LatestPointer p = board.readLatest();
        assertNull(p.runId());
        assertEquals(2, p.version());
        assertEquals(2, board.readManifest(2).version());
        Files.writeString(tmp.resolve("latest"), "garbage");
        assertThrows(ProtocolException.class, board::readLatest);
        Files.writeString(tmp.resolve("latest"), "../weight_v000001");
        assertThrows(ProtocolException.class, board::readLatest);
    }

    @Test
    void headLayoutWithFullCheckpoint() throws IOException {
        copyXorVersions(tmp.resolve("updates"));
        Path full = Files.createDirectories(tmp.resolve("updates/weight_v000003"));
        Files.copy(Fixtures.path("disk-v2/expected/weight_v000002/model.safetensors"), full.resolve("model.safetensors"));
        Files.writeString(full.resolve("model.safetensors.index.json"), "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {}}");
        Files.writeString(tmp.resolve("latest"), "run-x/weight_v000003");
        BulletinBoard board = BulletinBoard.open(tmp, BoardLayout.HEAD, BoardOptions.defaults());
        LatestPointer p = board.readLatest();
        assertEquals("run-x", p.runId());
        Manifest m3 = board.readManifest(3, p);
        assertEquals("full", m3.backend());
        assertTrue(m3.isAnchor());
        assertEquals(OptionalLong.of(3), board.newestAnchorAtOrBelow(3));
        assertEquals(2, board.verifyArtifacts(m3, false).unverified());
        assertEquals(tmp.resolve("updates/weight_v000001"), board.versionDirectory(1));
        assertEquals("disk_delta", board.readManifest(1).backend());
        assertEquals(BoardLayout.HEAD, BoardLayout.parse(" Head "));
        assertThrows(IllegalArgumentException.class, () -> BoardLayout.parse("other"));
    }
}
