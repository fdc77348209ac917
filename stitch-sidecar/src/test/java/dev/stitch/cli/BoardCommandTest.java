package dev.stitch.cli;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.protocol.ArtifactKind;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class BoardCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    private record Run(int code, String out, String err) {
    }

    private static Run run(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        int code;
        StringWriter err = new StringWriter();
        try {
            // built after redirecting System.out, so that picocli's own writer (--help) is captured too
            CommandLine cl = StitchCli.commandLine();
            cl.setErr(new PrintWriter(err));
            code = cl.execute(args);
        } finally {
            System.out.flush();
            System.setOut(saved);
        }
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString());
    }

    private Path fixtureCopy() throws IOException {
        Path from = Fixtures.path("board-v1");
        Path to = tmp.resolve("board");
        List<Path> all;
        try (Stream<Path> s = Files.walk(from)) {
            all = s.toList();
        }
        for (Path p : all) {
            Path target = to.resolve(from.relativize(p).toString());
            if (Files.isDirectory(p)) {
                Files.createDirectories(target);
            } else {
                Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return to;
    }

    @Test
    void showJsonOfTheFixtureBoard() throws IOException {
        Run r = run("board", "show", "--root", Fixtures.path("board-v1").toString(), "--json");
        assertEquals(0, r.code(), r.err());
        JsonNode doc = JSON.readTree(r.out());
        assertTrue(doc.get("latest").get("run_id").isNull());
        assertEquals(3, doc.get("latest").get("version").asInt());
        JsonNode versions = doc.get("versions");
        assertEquals(3, versions.size());
        assertEquals(1, versions.get(0).get("version").asInt());
        assertEquals(0, versions.get(0).get("base_version").asInt());
        assertEquals("disk_delta", versions.get(0).get("backend").asText());
        assertEquals("run-1", versions.get(0).get("run_id").asText());
        assertFalse(versions.get(0).get("anchor").asBoolean());
        assertEquals(1, versions.get(0).get("files").asInt());
        assertEquals(1700000001.0, versions.get(0).get("created_at").asDouble());
        assertTrue(versions.get(1).get("run_id").isNull());
        assertEquals(0, versions.get(2).get("files").asInt());
        Run table = run("board", "show", "--root", Fixtures.path("board-v1").toString());
        assertEquals(0, table.code(), table.err());
        assertTrue(table.out().contains("disk_delta"), table.out());
    }

    @Test
    void showReportsMissingVersions() throws IOException {
        Path board = fixtureCopy();
        Files.delete(board.resolve("versions/weight_v000002/manifest.json"));
        Run r = run("board", "show", "--root", board.toString(), "--json");
        assertEquals(0, r.code(), r.err());
        JsonNode v2 = JSON.readTree(r.out()).get("versions").get(1);
        assertEquals(2, v2.get("version").asInt());
        assertTrue(v2.get("error").asText().contains("versions/weight_v000002/manifest.json"), v2.toString());
    }

    @Test
    void verifyPassesOnTheFixtureAndFailsOnDamage() throws IOException {
        Run ok = run("board", "verify", "--root", Fixtures.path("board-v1").toString());
        assertEquals(0, ok.code(), ok.err());
        assertTrue(ok.out().contains("1 unverified"), ok.out());
        Run strict = run("board", "verify", "--root", Fixtures.path("board-v1").toString(), "--require-checksums");
        assertNotEquals(0, strict.code());
        assertTrue(strict.err().contains("versions/weight_v000002/model-00000-of-00001.safetensors"), strict.err());

        Path board = fixtureCopy();
        Path artifact = board.resolve("versions/weight_v000001/model-00000-of-00001.safetensors");
        byte[] bytes = Files.readAllBytes(artifact);
        bytes[100] ^= 0x01;
        Files.write(artifact, bytes);
        Run flipped = run("board", "verify", "--root", board.toString());
        assertNotEquals(0, flipped.code());
        assertTrue(flipped.err().contains("versions/weight_v000001/model-00000-of-00001.safetensors"), flipped.err());
        assertTrue(flipped.err().contains("sha256 digest mismatch"), flipped.err());
        assertEquals(1, flipped.err().strip().lines().count(), "one line on stderr: " + flipped.err());
        bytes[100] ^= 0x01;
        Files.write(artifact, bytes);
        assertEquals(0, run("board", "verify", "--root", board.toString()).code());

        Path manifest = board.resolve("versions/weight_v000002/manifest.json");
        byte[] m = Files.readAllBytes(manifest);
        Files.write(manifest, java.util.Arrays.copyOf(m, m.length / 2));
        Run truncated = run("board", "verify", "--root", board.toString());
        assertNotEquals(0, truncated.code());
        assertTrue(truncated.err().contains("versions/weight_v000002/manifest.json"), truncated.err());
        Run from3 = run("board", "verify", "--root", board.toString(), "--from", "3");
        assertEquals(0, from3.code(), from3.err());
        assertNotEquals(0, run("board", "verify", "--root", board.toString(), "--from", "9").code());
    }

    @Test
    void verifyNamesATruncatedManifestOfOurOwnBoard() throws IOException {
        Path root = tmp.resolve("ours");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(root, "run-a", BoardOptions.defaults());
        for (int v = 1; v <= 3; v++) {
            try (VersionPublication pub = board.beginPublish("run-a", v)) {
                pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION, out -> out.write(new byte[1000]));
                if (v == 2) {
                    pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[500]));
                }
                pub.commit(ManifestFields.of("stitch_delta", "auto"));
            }
        }
        Run ok = run("board", "verify", "--root", root.toString(), "--require-checksums");
        assertEquals(0, ok.code(), ok.err());
        assertTrue(ok.out().contains("versions 2..3"), "starts at the newest anchor: " + ok.out());
        Path manifest = root.resolve("versions/weight_v000003/manifest.json");
        byte[] m = Files.readAllBytes(manifest);
        Files.write(manifest, java.util.Arrays.copyOf(m, m.length - 10));
        Run bad = run("board", "verify", "--root", root.toString());
        assertNotEquals(0, bad.code());
        assertTrue(bad.err().contains("versions/weight_v000003/manifest.json"), bad.err());
    }

    @Test
    void initShowAndGc() throws IOException {
        Path root = tmp.resolve("fresh");
        Run init = run("board", "init", "--root", root.toString(), "--run-id", "run-z");
        assertEquals(0, init.code(), init.err());
        assertTrue(Files.isDirectory(root.resolve("versions")));
        JsonNode latest = JSON.readTree(root.resolve("latest.json").toFile());
        assertEquals("run-z", latest.get("run_id").asText());
        assertEquals(0, latest.get("version").asInt());
        byte[] before = Files.readAllBytes(root.resolve("latest.json"));
        assertEquals(0, run("board", "init", "--root", root.toString()).code());
        assertTrue(java.util.Arrays.equals(before, Files.readAllBytes(root.resolve("latest.json"))), "existing board unchanged");
        assertNotEquals(0, run("board", "init", "--root", tmp.resolve("x").toString(), "--run-id", "bad/run").code());
        Run show = run("board", "show", "--root", root.toString(), "--json");
        assertEquals("{\"latest\": {\"run_id\": \"run-z\", \"version\": 0}, \"versions\": []}", show.out().strip());
        Run verify = run("board", "verify", "--root", root.toString());
        assertEquals(0, verify.code(), verify.err());
        Run gc = run("board", "gc", "--root", root.toString(), "--keep", "2");
        assertEquals(0, gc.code(), gc.err());
        assertTrue(gc.out().contains("deleted versions: none"), gc.out());
        assertNotEquals(0, run("board", "gc", "--root", root.toString()).code(), "--keep is required");
        assertNotEquals(0, run("board", "show", "--root", tmp.resolve("nope").toString()).code());
        assertNotEquals(0, run("board", "show", "--root", root.toString(), "--layout", "weird").code());
    }

    @Test
    void everyOptionHasAHelpText() {
        CommandLine board = StitchCli.commandLine().getSubcommands().get("board");
        for (CommandLine sub : board.getSubcommands().values()) {
            assertTrue(sub.getCommandSpec().usageMessage().description().length > 0, sub.getCommandName());
            sub.getCommandSpec().options().forEach(o -> assertTrue(o.description().length > 0,
                    sub.getCommandName() + " " + o.longestName()));
        }
        Run help = run("board", "verify", "--help");
        assertEquals(0, help.code());
        assertTrue(help.out().contains("--require-checksums"), help.out() + " / " + help.err());
    }
}
