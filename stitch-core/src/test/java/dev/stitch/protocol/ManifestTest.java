package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class ManifestTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The golden manifests of docs/protocol/board.md §1.2, as one line each. */
    static final String GOLDEN_1 = "{\"artifacts\": [{\"checksum\": \"sha256:deadbeef\", \"kind\": \"transition\", \"path\": \"model-00000-of-00001.safetensors\", \"size_bytes\": 8}], \"backend\": \"disk_delta\", \"base_model\": \"Qwen/Qwen3-4B\", \"base_version\": 0, \"checksum_format\": \"xxh3-128\", \"compression_format\": \"zstd\", \"created_at\": 1700000001.0, \"delta_encoding\": \"xor\", \"load_format\": \"auto\", \"metadata\": {\"trainer\": \"slime\", \"transport\": \"disk\"}, \"protocol_version\": 1, \"run_id\": \"run-1\", \"transition_files\": [\"model-00000-of-00001.safetensors\"], \"transition_weights\": [\"model.embed_tokens.weight\"], \"version\": 1}\n";
    static final String GOLDEN_2 = "{\"artifacts\": [{\"kind\": \"transition\", \"path\": \"model-00000-of-00001.safetensors\"}], \"backend\": \"disk_delta\", \"base_version\": 2, \"created_at\": 1700000003.0, \"load_format\": \"auto\", \"protocol_version\": 1, \"transition_files\": [\"model-00000-of-00001.safetensors\"], \"version\": 3}\n";
    static final String GOLDEN_3 = "{\"artifacts\": [], \"backend\": \"fake\", \"base_version\": 0, \"created_at\": 1700000001.5, \"load_format\": \"noop\", \"protocol_version\": 1, \"transition_files\": [], \"version\": 1}\n";

    private static Manifest parse(String s) throws ProtocolException {
        return Manifest.parse(s.getBytes(StandardCharsets.UTF_8), "test manifest");
    }

    /** docs/conformance.md case 1: the spec goldens parse to the expected values and re-serialize byte for byte. */
    @Test
    void specGoldensRoundTrip() throws IOException {
        Manifest m1 = parse(GOLDEN_1);
        assertEquals(1, m1.version());
        assertEquals(0, m1.baseVersion());
        assertEquals("disk_delta", m1.backend());
        assertEquals("auto", m1.loadFormat());
        assertEquals("xor", m1.deltaEncoding());
        assertEquals("zstd", m1.compressionFormat());
        assertEquals("xxh3-128", m1.checksumFormat());
        assertEquals("run-1", m1.runId());
        assertEquals("Qwen/Qwen3-4B", m1.baseModel());
        assertEquals(1700000001.0, m1.createdAt());
        assertEquals(List.of("model.embed_tokens.weight"), m1.transitionWeights());
        assertEquals(8L, m1.artifacts().get(0).sizeBytes());
        assertEquals("sha256:deadbeef", m1.artifacts().get(0).checksum());
        assertEquals("slime", m1.metadata().get("trainer").asText());
        for (String golden : List.of(GOLDEN_1, GOLDEN_2, GOLDEN_3)) {
            assertEquals(golden, new String(parse(golden).toBytes(), StandardCharsets.UTF_8));
        }
        Manifest m3 = parse(GOLDEN_3);
        assertEquals("fake", m3.backend());
        assertEquals("noop", m3.loadFormat());
        assertTrue(m3.artifacts().isEmpty());
        assertFalse(m3.isAnchor());
    }

    /** docs/conformance.md case 1 on the fixture board: every manifest re-serializes to its exact bytes. */
    @Test
    void boardV1ManifestsRoundTrip() throws IOException {
        for (int v = 1; v <= 3; v++) {
            Path file = Fixtures.path("board-v1/versions/" + WeightIdentity.format(v) + "/manifest.json");
            byte[] bytes = Files.readAllBytes(file);
            Manifest m = Manifest.parse(bytes, file.toString());
            assertEquals(v, m.version());
            assertEquals(v - 1, m.baseVersion());
            assertArrayEquals(bytes, m.toBytes(), file.toString());
        }
    }

    /** docs/conformance.md case 2. */
    @Test
    void protocolVersion() throws IOException {
        assertThrows(ProtocolException.class, () -> parse("{\"protocol_version\": 2, \"version\": 1, \"base_version\": 0}"));
        assertThrows(ProtocolException.class, () -> parse("{\"protocol_version\": \"x\", \"version\": 1, \"base_version\": 0}"));
        Manifest m = parse("{\"version\": 1, \"base_version\": 0}");
        assertEquals("sparse_delta", m.backend());
        assertEquals("delta", m.loadFormat());
        assertEquals(0.0, m.createdAt());
        assertTrue(new String(m.toBytes(), StandardCharsets.UTF_8).contains("\"protocol_version\": 1"));
    }

    /** docs/conformance.md case 3. */
    @Test
    void lenientIntegers() throws IOException {
        Manifest m = parse("{\"version\": \"7\", \"base_version\": \" 6 \", \"artifacts\": [{\"kind\": \"transition\", \"path\": \"a\", \"size_bytes\": \"8\"}]}");
        assertEquals(7, m.version());
        assertEquals(6, m.baseVersion());
        assertEquals(8L, m.artifacts().get(0).sizeBytes());
        for (String bad : List.of("\"x7\"", "-1", "1.5", "true", "\"\"", "[7]", "7.0", "1e3")) {
            assertThrows(ProtocolException.class, () -> parse("{\"version\": " + bad + ", \"base_version\": 0}"), bad);
            assertThrows(ProtocolException.class, () -> parse("{\"version\": 1, \"base_version\": " + bad + "}"), bad);
            assertThrows(ProtocolException.class, () -> parse("{\"version\": 1, \"base_version\": 0, \"artifacts\": "
                    + "[{\"kind\": \"transition\", \"path\": \"a\", \"size_bytes\": " + bad + "}]}"), bad);
        }
        assertThrows(ProtocolException.class, () -> parse("{\"base_version\": 0}"));
        assertThrows(ProtocolException.class, () -> parse("{\"version\": 1}"));
    }

    /** docs/conformance.md case 4. */
    @Test
    void transitionFilesRebuiltFromTransitionArtifacts() throws IOException {
        Manifest m = parse("{\"version\": 2, \"base_version\": 1, \"transition_files\": [], \"artifacts\": ["
                + "{\"kind\": \"full\", \"path\": \"full/model.safetensors\"},"
                + "{\"kind\": \"transition\", \"path\": \"b.bin\"},"
                + "{\"kind\": \"transition_meta\", \"path\": \"model.safetensors.index.json\"},"
                + "{\"kind\": \"transition\", \"path\": \"a.bin\"}]}");
        assertEquals(List.of("b.bin", "a.bin"), m.transitionFiles());
        assertTrue(m.isAnchor());
        assertEquals(1, m.artifactsOf(dev.stitch.protocol.ArtifactKind.FULL).size());
        Manifest missing = parse("{\"version\": 2, \"base_version\": 1, \"artifacts\": [{\"kind\": \"transition\", \"path\": \"x\"}]}");
        assertEquals(List.of("x"), missing.transitionFiles());
        Manifest synthesized = parse("{\"version\": 2, \"base_version\": 1, \"transition_files\": [\"p\", \"q\"]}");
        assertEquals(2, synthesized.artifacts().size());
        assertEquals("transition", synthesized.artifacts().get(1).kind());
        assertEquals("q", synthesized.artifacts().get(1).path());
    }

    /** docs/conformance.md case 5. */
    @Test
    void unknownKeysIgnoredRecoveryKept() throws IOException {
        String in = "{\"version\": 1, \"base_version\": 0, \"future\": {\"x\": 1}, \"recovery\": {\"b\": [1, 2.5, null], \"a\": \"z\"},"
                + " \"artifacts\": [{\"kind\": \"weird\", \"path\": \"w\", \"extra\": 1, \"metadata\": {\"k\": 1}}]}";
        Manifest m = parse(in);
        assertEquals(JSON.readTree("{\"b\": [1, 2.5, null], \"a\": \"z\"}"), m.recovery());
        assertNull(m.artifacts().get(0).knownKind());
        assertEquals("weird", m.artifacts().get(0).kind());
        String out = new String(m.toBytes(), StandardCharsets.UTF_8);
        assertFalse(out.contains("future"));
        assertFalse(out.contains("extra"));
        assertTrue(out.contains("\"recovery\": {\"a\": \"z\", \"b\": [1, 2.5, null]}"), out);
        assertTrue(out.contains("{\"kind\": \"weird\", \"metadata\": {\"k\": 1}, \"path\": \"w\"}"), out);
        assertEquals(m, parse(out));
    }

    /** docs/conformance.md case 9 (at parse time). */
    @Test
    void unsafeArtifactPathsRejected() {
        for (String bad : List.of("/abs", "../x", "a//b", "a\\\\b", "a/../b", "", "a/", "./a", "C:/x")) {
            assertThrows(ProtocolException.class, () -> parse("{\"version\": 1, \"base_version\": 0, \"artifacts\": "
                    + "[{\"kind\": \"transition\", \"path\": \"" + bad + "\"}]}"), bad);
            assertThrows(ProtocolException.class, () -> parse("{\"version\": 1, \"base_version\": 0, \"transition_files\": [\""
                    + bad + "\"]}"), bad);
        }
        assertNull(Artifact.pathProblem("full/model-00001-of-00002.safetensors"));
        assertNull(Artifact.pathProblem("a..b/..c"));
    }

    @Test
    void malformedDocuments() {
        for (String bad : List.of("", "nul", "[]", "7", "{\"version\": 1, \"base_version\": 0} x", "{\"version\": 1,",
                "{\"version\": 1, \"base_version\": 0, \"artifacts\": {}}",
                "{\"version\": 1, \"base_version\": 0, \"artifacts\": [{\"path\": \"a\"}]}",
                "{\"version\": 1, \"base_version\": 0, \"artifacts\": [{\"kind\": \"transition\"}]}",
                "{\"version\": 1, \"base_version\": 0, \"artifacts\": [7]}",
                "{\"version\": 1, \"base_version\": 0, \"metadata\": [1]}",
                "{\"version\": 1, \"base_version\": 0, \"backend\": 5}",
                "{\"version\": 1, \"base_version\": 0, \"created_at\": \"now\"}",
                "{\"version\": 1, \"base_version\": 0, \"transition_weights\": [1]}")) {
            assertThrows(ProtocolException.class, () -> parse(bad), bad);
        }
    }

    @Test
    void writerOmitsUnsetOptionalKeys() throws IOException {
        Manifest m = new Manifest(4, 3, "stitch_delta", "auto", null,
                List.of(Artifact.of(ArtifactKind.TRANSITION, "delta-00000.stdelta", 10,
                        dev.stitch.hash.Hash128.parseHex("99aa06d3014798d86001c324468d497f"))),
                1700000004.0, "stitch-delta-1", "zstd", "xxh3-128", List.of(), "run-a", null, null, JSON.readTree("{}"));
        assertEquals("{\"artifacts\": [{\"checksum\": \"xxh3-128:99aa06d3014798d86001c324468d497f\", \"kind\": \"transition\","
                + " \"path\": \"delta-00000.stdelta\", \"size_bytes\": 10}], \"backend\": \"stitch_delta\", \"base_version\": 3,"
                + " \"checksum_format\": \"xxh3-128\", \"compression_format\": \"zstd\", \"created_at\": 1700000004.0,"
                + " \"delta_encoding\": \"stitch-delta-1\", \"load_format\": \"auto\", \"protocol_version\": 1, \"run_id\": \"run-a\","
                + " \"transition_files\": [\"delta-00000.stdelta\"], \"version\": 4}\n",
                new String(m.toBytes(), StandardCharsets.UTF_8));
    }
}
