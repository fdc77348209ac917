package dev.stitch.protocol;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

class SlimeIndexTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** docs/conformance.md case 19. */
    @Test
    void deltaIndexLifts() throws IOException {
        String index = "{\"metadata\": {\"version\": \"000007\", \"base_version\": \"000006\", \"delta_encoding\": \"xor\","
                + " \"compression_format\": \"zstd\", \"checksum_format\": \"xxh3-128\"}, \"weight_map\": {"
                + "\"model.norm.weight\": \"model-00001-of-00002.safetensors\","
                + "\"model.embed_tokens.weight\": \"model-00000-of-00002.safetensors\","
                + "\"lm_head.weight\": \"model-00001-of-00002.safetensors\"}}";
        Manifest m = SlimeIndex.toManifest(JSON.readTree(index), "run-a", 7, List.of());
        assertEquals(7, m.version());
        assertEquals(6, m.baseVersion());
        assertEquals("disk_delta", m.backend());
        assertEquals("auto", m.loadFormat());
        assertEquals("xor", m.deltaEncoding());
        assertEquals("zstd", m.compressionFormat());
        assertEquals("xxh3-128", m.checksumFormat());
        assertEquals(List.of("model-00000-of-00002.safetensors", "model-00001-of-00002.safetensors"), m.transitionFiles());
        assertEquals(List.of("lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"), m.transitionWeights());
        assertEquals("run-a", m.runId());
        assertEquals(2, m.artifacts().size());
        assertNull(m.artifacts().get(0).checksum());
        assertEquals("transition", m.artifacts().get(0).kind());
    }

    @Test
    void indexWithoutEncodingIsFull() throws IOException {
        String index = "{\"metadata\": {\"total_size\": 100}, \"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\"}}";
        Manifest m = SlimeIndex.toManifest(JSON.readTree(index), null, 4, List.of("model-00002-of-00002.safetensors",
                "model-00001-of-00002.safetensors"));
        assertEquals("full", m.backend());
        assertEquals(3, m.baseVersion());
        assertTrue(m.isAnchor());
        assertTrue(m.transitionFiles().isEmpty());
        assertEquals(List.of("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                "model.safetensors.index.json"), m.artifacts().stream().map(Artifact::path).toList());
    }

    /** The real slime indexes in the fixtures, including the no-change version 3 (empty weight_map: a no-op). */
    @Test
    void fixtureIndexes() throws IOException {
        Manifest v1 = SlimeIndex.toManifest(JSON.readTree(Files.readAllBytes(
                Fixtures.path("disk-v2/xor/weight_v000001/model.safetensors.index.json"))), null, 1, List.of());
        assertEquals(0, v1.baseVersion());
        assertEquals(List.of("model-00000-of-00001.safetensors"), v1.transitionFiles());
        assertEquals(5, v1.transitionWeights().size());
        Manifest v3 = SlimeIndex.toManifest(JSON.readTree(Files.readAllBytes(
                Fixtures.path("board-v1/versions/weight_v000003/model.safetensors.index.json"))), null, 3, List.of());
        assertEquals("disk_delta", v3.backend());
        assertTrue(v3.transitionFiles().isEmpty());
        assertThrows(ProtocolException.class, () -> SlimeIndex.toManifest(JSON.readTree(Files.readAllBytes(
                Fixtures.path("disk-v2/xor/weight_v000001/model.safetensors.index.json"))), null, 2, List.of()));
    }
}
