package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FilesystemBulletinBoardTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    private static ManifestFields fields() {
        return ManifestFields.of("stitch_delta", "auto").withCodec("stitch-delta-1", "zstd", "xxh3-128");
    }

    /** Publishes {@code version} with one transition artifact holding {@code payload}. */
    static Manifest publish(FilesystemBulletinBoard board, String run, long version, String payload) throws IOException {
        try (VersionPublication pub = board.beginPublish(run, version)) {
            pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION,
                    out -> out.write(payload.getBytes(StandardCharsets.UTF_8)));
            return pub.commit(fields());
        }
    }

    static Manifest publishAnchor(FilesystemBulletinBoard board, String run, long version) throws IOException {
        try (VersionPublication pub = board.beginPublish(run, version)) {
            pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION, out -> out.write(new byte[] {1, 2, 3}));
            pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[64]));
            return pub.commit(fields());
        }
    }

    @Test
    void readsTheFixtureBoard() throws IOException {
        BulletinBoard board = BulletinBoard.open(BoardFixtures.boardV1());
        LatestPointer p = board.readLatest();
        assertEquals(3, p.version());
        assertNull(p.runId());
        long previous = 0;
        for (long v = 1; v <= 3; v++) {
            Manifest m = board.readManifest(v, p);
            assertEquals(previous, m.baseVersion(), "the chain is contiguous");
            previous = v;
        }
        Manifest m1 = board.readManifest(1);
        VerificationReport r1 = board.verifyArtifacts(m1, true);
        assertEquals(1, r1.artifactsVerified());
        assertEquals(6310, r1.bytesVerified());
        Manifest m2 = board.readManifest(2);
        assertEquals(1, board.verifyArtifacts(m2, false).unverified());
        ArtifactVerificationException e = assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(m2, true));
        assertEquals("versions/weight_v000002/model-00000-of-00001.safetensors", e.file());
        assertEquals(VerificationReport.EMPTY, board.verifyArtifacts(board.readManifest(3), true));
        assertEquals(OptionalLong.empty(), board.newestAnchorAtOrBelow(3));
        assertThrows(NoSuchFileException.class, () -> board.readManifest(4));
    }

    /** docs/conformance.md case 6 and 2 at the board level. */
    @Test
    void pointerReadErrors() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp);
        assertEquals(LatestPointer.EMPTY, board.readLatest());
        Files.writeString(tmp.resolve("latest.json"), "{\"version\": ");
        assertThrows(ProtocolException.class, board::readLatest);
        Files.writeString(tmp.resolve("latest.json"), "{\"protocol_version\": 2, \"version\": 0}\n");
        assertThrows(ProtocolException.class, board::readLatest);
        Files.writeString(tmp.resolve("latest.json"), "");
        assertThrows(ProtocolException.class, board::readLatest);
        Files.delete(tmp.resolve("latest.json"));

        FilesystemBulletinBoard.create(tmp, "run-a", BoardOptions.defaults());
        publish(board, "run-a", 1, "one");
        assertTrue(board.readLatest().manifestChecksum().startsWith("xxh3-128:"));
        Path manifest = tmp.resolve("versions/weight_v000001/manifest.json");
        byte[] good = Files.readAllBytes(manifest);
        byte[] bad = good.clone();
        bad[bad.length - 3] ^= 1;
        Files.write(manifest, bad);
        ProtocolException e = assertThrows(ProtocolException.class, board::readLatest);
        assertTrue(e.getMessage().contains("manifest_checksum"), e.getMessage());
        Files.delete(manifest);
        assertThrows(ProtocolException.class, board::readLatest);
        Files.write(manifest, good);
        assertEquals(1, board.readLatest().version());
    }

    @Test
    void manifestMustMatchItsDirectory() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("versions/weight_v000002"));
        Files.writeString(dir.resolve("manifest.json"), "{\"version\": 3, \"base_version\": 2}");
        BulletinBoard board = BulletinBoard.open(tmp);
        assertThrows(ProtocolException.class, () -> board.readManifest(2));
        Files.writeString(dir.resolve("manifest.json"), "{\"version\": 2, \"base_version\": 1, \"run_id\": \"b\"}");
        LatestPointer runA = new LatestPointer("a", 2, 0, null);
        assertThrows(ProtocolException.class, () -> board.readManifest(2, runA));
        assertEquals(2, board.readManifest(2, new LatestPointer(null, 2, 0, null)).version());
    }

    @Test
    void publishWritesVerifiableVersions() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, "run-a", BoardOptions.defaults());
        assertEquals(new LatestPointer("run-a", 0, board.readLatest().updatedAt(), null), board.readLatest());
        Manifest m1 = publish(board, "run-a", 1, "payload-1");
        assertEquals(0, m1.baseVersion());
        assertEquals("run-a", m1.runId());
        assertEquals(List.of("delta-00000.stdelta"), m1.transitionFiles());
        Artifact a = m1.artifacts().get(0);
        assertEquals(9L, a.sizeBytes());
        assertEquals("xxh3-128:" + Xxh3.hash128("payload-1".getBytes(StandardCharsets.UTF_8)).hex(), a.checksum());
        assertEquals(m1, board.readManifest(1));
        assertEquals(1, board.verifyArtifacts(m1, true).artifactsVerified());
        LatestPointer p = board.readLatest();
        assertEquals(1, p.version());
        assertEquals("run-a", p.runId());
        assertEquals("xxh3-128:" + Xxh3.hash128(Files.readAllBytes(tmp.resolve("versions/weight_v000001/manifest.json"))).hex(),
                p.manifestChecksum());
        Manifest m2 = publishAnchor(board, "run-a", 2);
        assertTrue(m2.isAnchor());
        assertEquals(List.of("delta-00000.stdelta"), m2.transitionFiles());
        assertEquals(OptionalLong.of(2), board.newestAnchorAtOrBelow(5));
        assertEquals(OptionalLong.empty(), board.newestAnchorAtOrBelow(1));
        assertEquals(2, board.verifyArtifacts(m2, true).artifactsVerified());
        assertEquals(1, board.verifyArtifacts(m2, x -> x.is(ArtifactKind.FULL), true).artifactsVerified());
        try (Stream<Path> s = Files.list(tmp.resolve("versions"))) {
            assertEquals(List.of("weight_v000001", "weight_v000002"), s.map(x -> x.getFileName().toString()).sorted().toList());
        }
        assertTrue(board.leftovers().isEmpty(), board.leftovers().toString());
    }

    @Test
    void addArtifactVariants() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults());
        try (VersionPublication pub = board.beginPublish(null, 1)) {
            Path big = pub.resolve("full/model-00001-of-00001.safetensors");
            board.options().files().write(big, "weights".getBytes(StandardCharsets.UTF_8));
            Artifact hashed = pub.addArtifact("full/model-00001-of-00001.safetensors", ArtifactKind.FULL);
            assertEquals(7L, hashed.sizeBytes());
            AtomicFiles.WrittenFile w = board.options().files().write(pub.resolve("model.safetensors.index.json"),
                    out -> out.write("{}".getBytes(StandardCharsets.UTF_8)));
            assertThrows(IOException.class, () -> pub.addArtifact("model.safetensors.index.json", ArtifactKind.TRANSITION_META,
                    w.sizeBytes() + 1, w.xxh3()));
            pub.addArtifact("model.safetensors.index.json", ArtifactKind.TRANSITION_META, w.sizeBytes(), w.xxh3());
            assertThrows(IllegalArgumentException.class, () -> pub.addArtifact("model.safetensors.index.json", ArtifactKind.FULL));
            assertThrows(IllegalArgumentException.class, () -> pub.writeArtifact("../escape", ArtifactKind.FULL, out -> { }));
            assertThrows(IllegalArgumentException.class, () -> pub.writeArtifact("manifest.json", ArtifactKind.FULL, out -> { }));
            assertThrows(IOException.class, () -> pub.addArtifact("absent.bin", ArtifactKind.TRANSITION));
            Manifest m = pub.commit(ManifestFields.of("full", "auto"));
            assertTrue(m.transitionFiles().isEmpty());
            assertEquals(2, m.artifacts().size());
            assertNull(m.runId());
            assertEquals(2, board.verifyArtifacts(m, true).artifactsVerified());
        }
        assertNull(board.readLatest().runId());
    }

    @Test
    void abortedPublishLeavesNothing() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults());
        try (VersionPublication pub = board.beginPublish("r", 1)) {
            pub.writeArtifact("a.bin", ArtifactKind.TRANSITION, out -> out.write(1));
            assertTrue(Files.isDirectory(pub.stagingDirectory()));
            assertThrows(IOException.class, () -> pub.writeArtifact("b.bin", ArtifactKind.TRANSITION, out -> {
                out.write(2);
                throw new IOException("writer failed");
            }));
        }
        try (Stream<Path> s = Files.list(tmp.resolve("versions"))) {
            assertEquals(0, s.count());
        }
        assertEquals(0, board.readLatest().version());
        publish(board, "r", 1, "x");
        assertEquals(1, board.readLatest().version());
    }

    /** docs/conformance.md case 8. */
    @Test
    void verificationFailures() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults());
        Manifest m = publish(board, null, 1, "abc");
        Path file = tmp.resolve("versions/weight_v000001/delta-00000.stdelta");
        Artifact a = m.artifacts().get(0);
        assertEquals("xxh3-128:06b05ab6733a618578af5f94892f3950", a.checksum(), "the xxh3-128 test vector of 'abc'");
        String rel = "versions/weight_v000001/delta-00000.stdelta";
        record Case(Long size, String checksum, String problem) {
        }
        String sha = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        for (Case c : List.of(
                new Case(4L, a.checksum(), "is 3 bytes, the manifest says 4"),
                new Case(3L, "xxh3-128:99aa06d3014798d86001c324468d497f", "xxh3-128 digest mismatch"),
                new Case(3L, "xxh3-128:06b05ab6733a6185", "malformed xxh3-128 digest"),
                new Case(3L, "xxh3-128:06b05ab6733a618578af5f94892f395g", "malformed xxh3-128 digest"),
                new Case(3L, "sha256:deadbeef", "malformed sha256 digest"),
                new Case(3L, "md5:900150983cd24fb0d6963f7d28e17f72", "unknown checksum algorithm"),
                new Case(3L, "06b05ab6733a618578af5f94892f3950", "malformed checksum"),
                new Case(3L, sha.replace('b', 'c'), "sha256 digest mismatch"))) {
            Manifest bad = withArtifact(m, new Artifact("transition", a.path(), c.size(), c.checksum(), null));
            ArtifactVerificationException e = assertThrows(ArtifactVerificationException.class,
                    () -> board.verifyArtifacts(bad, false), c.toString());
            assertEquals(rel, e.file());
            assertTrue(e.problem().contains(c.problem()), e.problem());
        }
        assertEquals(1, board.verifyArtifacts(withArtifact(m, new Artifact("transition", a.path(), 3L, sha, null)), true)
                .artifactsVerified());
        assertEquals(1, board.verifyArtifacts(withArtifact(m, new Artifact("transition", a.path(), 3L,
                a.checksum().toUpperCase().replace("XXH3-128", "xxh3-128"), null)), true).artifactsVerified());
        Manifest noDigest = withArtifact(m, new Artifact("transition", a.path(), null, null, null));
        assertEquals(1, board.verifyArtifacts(noDigest, false).unverified());
        assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(noDigest, true));
        Files.write(file, "abd".getBytes(StandardCharsets.UTF_8));
        assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(m, false));
        Files.delete(file);
        ArtifactVerificationException missing = assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(m, false));
        assertTrue(missing.problem().contains("missing"));
        Files.createSymbolicLink(file, tmp.resolve("latest.json"));
        assertThrows(ArtifactVerificationException.class, () -> board.verifyArtifacts(m, false));
    }

    @Test
    void emptyFileTestVector() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults());
        Manifest m = publish(board, null, 1, "");
        assertEquals("xxh3-128:99aa06d3014798d86001c324468d497f", m.artifacts().get(0).checksum());
        assertEquals(1, board.verifyArtifacts(m, true).artifactsVerified());
    }

    private static Manifest withArtifact(Manifest m, Artifact a) {
        return new Manifest(m.version(), m.baseVersion(), m.backend(), m.loadFormat(), m.transitionFiles(), List.of(a),
                m.createdAt(), m.deltaEncoding(), m.compressionFormat(), m.checksumFormat(), m.transitionWeights(), m.runId(),
                m.baseModel(), m.recovery(), m.metadata());
    }

    /** docs/conformance.md case 10 and 11. */
    @Test
    void pointerMoveRejectionsLeaveTheBoardUntouched() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, "run-a", BoardOptions.defaults());
        for (int v = 1; v <= 5; v++) {
            publish(board, "run-a", v, "v" + v);
        }
        byte[] pointer = Files.readAllBytes(tmp.resolve("latest.json"));
        byte[] manifest3 = Files.readAllBytes(tmp.resolve("versions/weight_v000003/manifest.json"));
        PointerRewindException rewind = assertThrows(PointerRewindException.class, () -> publish(board, "run-a", 3, "again"));
        assertEquals("latest is at version 5 (run 'run-a'); refusing to rewind to 3", rewind.getMessage());
        assertThrows(PointerRewindException.class, () -> publish(board, "run-a", 5, "again"));
        assertThrows(PointerSkipException.class, () -> publish(board, "run-a", 7, "skip"));
        assertThrows(PointerConflictException.class, () -> publish(board, "run-b", 2, "fenced"));
        assertArrayEquals(pointer, Files.readAllBytes(tmp.resolve("latest.json")));
        assertArrayEquals(manifest3, Files.readAllBytes(tmp.resolve("versions/weight_v000003/manifest.json")));
        assertTrue(board.leftovers().isEmpty(), board.leftovers().toString());

        // a different run at version 1: implicit claim, old versions archived, then version 1 of the new run
        Manifest b1 = publish(board, "run-b", 1, "b1");
        assertEquals("run-b", b1.runId());
        LatestPointer p = board.readLatest();
        assertEquals("run-b", p.runId());
        assertEquals(1, p.version());
        for (int v = 1; v <= 5; v++) {
            assertTrue(Files.isDirectory(tmp.resolve("archive/run-a/weight_v00000" + v)), "archived " + v);
        }
        assertFalse(Files.exists(tmp.resolve("versions/weight_v000002")));
        assertEquals("v3", Files.readString(tmp.resolve("archive/run-a/weight_v000003/delta-00000.stdelta")));
    }

    /** docs/conformance.md case 15. */
    @Test
    void claims() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults());
        publish(board, null, 1, "legacy");
        Files.createDirectories(tmp.resolve("versions/weight_v000009"));
        assertThrows(IllegalArgumentException.class, () -> board.claim(""));
        assertThrows(IllegalArgumentException.class, () -> board.claim("a/b"));
        assertThrows(NullPointerException.class, () -> board.claim(null));
        LatestPointer p = board.claim("new");
        assertEquals("new", p.runId());
        assertEquals(0, p.version());
        assertEquals(p, board.readLatest());
        assertTrue(Files.exists(tmp.resolve("archive/norun/weight_v000001/manifest.json")));
        assertTrue(Files.isDirectory(tmp.resolve("archive/norun/weight_v000009")), "a directory without manifest is archived");
        assertEquals(p, board.claim("new"), "idempotent re-claim at 0");
        publish(board, "new", 1, "n1");
        PointerRewindException e = assertThrows(PointerRewindException.class, () -> board.claim("new"));
        assertTrue(e.getMessage().contains("version 1"));
        assertEquals(1, board.readLatest().version());
        LatestPointer other = board.claim("other");
        assertEquals("other", other.runId());
        assertTrue(Files.exists(tmp.resolve("archive/new/weight_v000001/delta-00000.stdelta")));
    }

    @Test
    void createLeavesAnExistingBoardAlone() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, "a", BoardOptions.defaults());
        publish(board, "a", 1, "x");
        byte[] before = Files.readAllBytes(tmp.resolve("latest.json"));
        FilesystemBulletinBoard.create(tmp, "b", BoardOptions.defaults());
        assertArrayEquals(before, Files.readAllBytes(tmp.resolve("latest.json")));
        assertThrows(IllegalArgumentException.class, () -> FilesystemBulletinBoard.create(tmp.resolve("x"), "", BoardOptions.defaults()));
    }

    @Test
    void refreshHookRunsBeforePointerReads() throws IOException {
        AtomicInteger calls = new AtomicInteger();
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp,
                BoardOptions.defaults().withRefreshHook(root -> calls.incrementAndGet()));
        board.readLatest();
        board.refresh();
        assertEquals(2, calls.get());
        BulletinBoard failing = BulletinBoard.open(tmp, BoardLayout.STITCH,
                BoardOptions.defaults().withRefreshHook(root -> {
                    throw new IOException("volume unavailable");
                }));
        assertThrows(IOException.class, failing::readLatest);
    }

    @Test
    void unsafeManifestOnDiskIsRejected() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("versions/weight_v000001"));
        Files.writeString(dir.resolve("manifest.json"), "{\"version\": 1, \"base_version\": 0, \"artifacts\": "
                + "[{\"kind\": \"transition\", \"path\": \"../../latest.json\"}]}");
        assertThrows(ProtocolException.class, () -> BulletinBoard.open(tmp).readManifest(1));
        Files.write(dir.resolve("manifest.json"), new byte[0]);
        assertThrows(ProtocolException.class, () -> BulletinBoard.open(tmp).readManifest(1));
    }

    @Test
    void lockContentAndRelease() throws IOException {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, null, BoardOptions.defaults().withWriterId("me"));
        try (BoardLock lock = BoardLock.acquire(tmp, board.options())) {
            var node = JSON.readTree(tmp.resolve(".stitch.lock").toFile());
            assertEquals("me", node.get("owner").asText());
            assertEquals(ProcessHandle.current().pid(), node.get("pid").asLong());
            assertEquals(BoardLock.host(), node.get("host").asText());
            assertTrue(node.get("acquired_at").isNumber());
            BoardLockedException e = assertThrows(BoardLockedException.class, () -> BoardLock.acquire(tmp,
                    board.options().withLockTimeout(java.time.Duration.ofMillis(100))));
            assertTrue(e.getMessage().contains("'me'"), e.getMessage());
        }
        assertFalse(Files.exists(tmp.resolve(".stitch.lock")));
    }
}
