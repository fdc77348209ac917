package dev.stitch.cli;

import static dev.stitch.cli.ApplyCommandTest.copyDir;
import static dev.stitch.cli.ApplyCommandTest.fixtures;
import static dev.stitch.cli.ApplyCommandTest.stitch;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code stitch board} and {@code stitch apply} on hostile boards: links, huge pointers, unknown kinds, wedges, leftovers. */
class BoardHostileInputTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    private Path ourBoard(int versions) throws IOException {
        Path root = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(root, "run-a", BoardOptions.defaults());
        for (int v = 1; v <= versions; v++) {
            int size = 100 + v;
            try (VersionPublication pub = board.beginPublish("run-a", v)) {
                pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION, out -> out.write(new byte[size]));
                pub.commit(ManifestFields.of("stitch_delta", "auto"));
            }
        }
        return root;
    }

    private Path linkOut(Path entry) throws IOException {
        Path outside = tmp.resolve("outside").resolve(entry.getFileName());
        Files.createDirectories(outside.getParent());
        Files.move(entry, outside);
        Files.createSymbolicLink(entry, outside);
        return outside;
    }

    @Test
    void verifyAndShowRefuseALinkedVersionDirectory() throws IOException {
        Path root = ourBoard(2);
        linkOut(root.resolve("versions/weight_v000002"));
        ApplyCommandTest.Run verify = stitch("board", "verify", "--root", root.toString());
        assertNotEquals(0, verify.code());
        assertTrue(verify.err().contains("versions/weight_v000002 is a symbolic link"), verify.err());
        ApplyCommandTest.Run show = stitch("board", "show", "--root", root.toString(), "--json");
        assertEquals(0, show.code(), show.err());
        assertTrue(show.out().contains("symbolic link"), show.out());
    }

    @Test
    void verifyRefusesALinkedPointer() throws IOException {
        Path root = ourBoard(1);
        linkOut(root.resolve(LatestPointer.FILE_NAME));
        ApplyCommandTest.Run verify = stitch("board", "verify", "--root", root.toString());
        assertNotEquals(0, verify.code());
        assertTrue(verify.err().contains("latest.json") && verify.err().contains("symbolic link"), verify.err());
    }

    @Test
    void applyRefusesALinkedVersionAndLeavesTheCheckpointAlone() throws IOException {
        Path board = copyDir(fixtures().resolve("board-v1"), tmp.resolve("board"));
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        linkOut(board.resolve("versions/weight_v000001"));
        byte[] before = Files.readAllBytes(local.resolve("model.safetensors"));
        ApplyCommandTest.Run r = stitch("apply", "--board", board.toString(), "--target", "2", "--checkpoint", local.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("versions/weight_v000001") && r.err().contains("symbolic link"), r.err());
        assertArrayEquals(before, Files.readAllBytes(local.resolve("model.safetensors")));
    }

    @Test
    void applyRefusesALinkedDiskDeltaIndex() throws IOException {
        Path board = copyDir(fixtures().resolve("board-v1"), tmp.resolve("board"));
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        linkOut(board.resolve("versions/weight_v000001/model.safetensors.index.json"));
        byte[] before = Files.readAllBytes(local.resolve("model.safetensors"));
        ApplyCommandTest.Run r = stitch("apply", "--board", board.toString(), "--target", "2", "--checkpoint", local.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("model.safetensors.index.json") && r.err().contains("symbolic link"), r.err());
        assertArrayEquals(before, Files.readAllBytes(local.resolve("model.safetensors")));
    }

    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS)
    void hugePointersCostWhatIsOnDisk() throws IOException {
        Path root = ourBoard(2);
        for (long huge : new long[] {Long.MAX_VALUE, 3_000_000L}) {
            Files.write(root.resolve(LatestPointer.FILE_NAME), new LatestPointer("run-a", huge, 1.0, null).toBytes());
            ApplyCommandTest.Run show = stitch("board", "show", "--root", root.toString());
            assertEquals(0, show.code(), show.err());
            assertTrue(show.out().contains("versions 3.." + huge + " missing"), show.out());
            assertTrue(show.out().lines().count() < 20, "a summary, not a line per version: " + show.out().lines().count());

            JsonNode doc = JSON.readTree(stitch("board", "show", "--root", root.toString(), "--json").out());
            assertEquals(2, doc.get("versions").size());
            assertEquals(3, doc.get("missing").get(0).get("from").asLong());
            assertEquals(huge, doc.get("missing").get(0).get("to").asLong());

            ApplyCommandTest.Run verify = stitch("board", "verify", "--root", root.toString());
            assertNotEquals(0, verify.code());
            assertTrue(verify.err().contains("versions/weight_v000003/manifest.json: is missing"), verify.err());
            assertTrue(verify.err().contains("versions 3.." + huge + " are missing"), verify.err());
            assertEquals(1, verify.err().strip().lines().count(), verify.err());
        }
    }

    @Test
    void unknownArtifactKindsDoNotBlockAVersion() throws IOException {
        Path board = copyDir(fixtures().resolve("board-v1"), tmp.resolve("board"));
        Path manifest = board.resolve("versions/weight_v000002/manifest.json");
        ObjectNode m = (ObjectNode) JSON.readTree(manifest.toFile());
        ObjectNode future = ((ArrayNode) m.get("artifacts")).addObject();
        future.put("kind", "signature_v9");
        future.put("path", "signatures/model.sig");
        future.put("size_bytes", 64);
        future.put("checksum", "xxh3-128:" + "0".repeat(32));
        Files.write(manifest, JSON.writeValueAsBytes(m));
        ApplyCommandTest.Run verify = stitch("board", "verify", "--root", board.toString());
        assertEquals(0, verify.code(), verify.err());
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        ApplyCommandTest.Run apply = stitch("apply", "--board", board.toString(), "--target", "3", "--checkpoint", local.toString());
        assertEquals(0, apply.code(), apply.err());
        assertTrue(apply.out().contains("version 0 -> 3"), apply.out());
    }

    @Test
    void repairUnwedgesABoardWithACorruptLatestManifest() throws IOException {
        Path root = ourBoard(3);
        Path manifest = root.resolve("versions/weight_v000003/manifest.json");
        byte[] m = Files.readAllBytes(manifest);
        Files.write(manifest, Arrays.copyOf(m, m.length - 10));
        assertNotEquals(0, stitch("board", "verify", "--root", root.toString()).code());

        byte[] pointer = Files.readAllBytes(root.resolve(LatestPointer.FILE_NAME));
        ApplyCommandTest.Run dry = stitch("board", "repair", "--board", root.toString(), "--dry-run");
        assertEquals(0, dry.code(), dry.err());
        assertTrue(dry.out().contains("versions/weight_v000003/manifest.json"), dry.out());
        assertTrue(dry.out().contains("would move versions/weight_v000003 aside"), dry.out());
        assertArrayEquals(pointer, Files.readAllBytes(root.resolve(LatestPointer.FILE_NAME)));
        assertTrue(Files.exists(manifest));

        ApplyCommandTest.Run fix = stitch("board", "repair", "--root", root.toString());
        assertEquals(0, fix.code(), fix.err());
        assertTrue(fix.out().contains("moved versions/weight_v000003 aside to versions/.weight_v000003."), fix.out());
        assertTrue(fix.out().contains("publish an anchor"), fix.out());
        assertFalse(Files.exists(root.resolve("versions/weight_v000003")));
        JsonNode latest = JSON.readTree(root.resolve(LatestPointer.FILE_NAME).toFile());
        assertEquals(3, latest.get("version").asInt());
        assertFalse(latest.has("manifest_checksum"));

        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
        try (VersionPublication pub = board.beginPublish("run-a", 4)) {
            pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION, out -> out.write(new byte[10]));
            pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[20]));
            pub.commit(ManifestFields.of("stitch_delta", "auto"));
        }
        ApplyCommandTest.Run healthy = stitch("board", "repair", "--root", root.toString());
        assertEquals(0, healthy.code(), healthy.err());
        assertTrue(healthy.out().contains("nothing to repair"), healthy.out());
        assertEquals(0, stitch("board", "verify", "--root", root.toString()).code());
    }

    @Test
    void gcLeftoverAgeCollectsCrashLeftovers() throws IOException {
        Path root = ourBoard(1);
        Path temp = root.resolve(".latest.json.0123456789abcdef.tmp");
        Files.writeString(temp, "{");
        Path staging = root.resolve("versions/.weight_v000002.0123456789abcdef.staging");
        Files.createDirectory(staging);
        Path lock = root.resolve(".stitch.lock");
        Files.writeString(lock, "{\"acquired_at\": 1.0, \"host\": \"elsewhere\", \"owner\": \"crashed\", \"pid\": 1}");
        Files.setLastModifiedTime(temp, FileTime.from(Instant.now().minusSeconds(120)));
        Files.setLastModifiedTime(staging, FileTime.from(Instant.now().minusSeconds(120)));

        ApplyCommandTest.Run keep = stitch("board", "gc", "--root", root.toString(), "--keep", "5");
        assertEquals(0, keep.code(), keep.err());
        assertTrue(keep.out().contains("removed .stitch.lock"), keep.out());
        assertTrue(Files.exists(temp) && Files.exists(staging), "younger than the default leftover age");

        ApplyCommandTest.Run quick = stitch("board", "gc", "--root", root.toString(), "--keep", "5", "--leftover-age", "1m");
        assertEquals(0, quick.code(), quick.err());
        assertFalse(Files.exists(temp, LinkOption.NOFOLLOW_LINKS));
        assertFalse(Files.exists(staging, LinkOption.NOFOLLOW_LINKS));
        assertTrue(quick.out().contains("removed versions/.weight_v000002.0123456789abcdef.staging"), quick.out());

        assertNotEquals(0, stitch("board", "gc", "--root", root.toString(), "--keep", "5", "--leftover-age", "soon").code());
        String help = StitchCli.commandLine().getSubcommands().get("board").getSubcommands().get("gc").getUsageMessage();
        assertTrue(help.contains("--leftover-age") && help.contains("Default: 1h"), help);
    }
}
