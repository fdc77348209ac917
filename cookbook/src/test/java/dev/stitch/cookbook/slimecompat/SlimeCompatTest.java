package dev.stitch.cookbook.slimecompat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.Manifest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SlimeCompatTest {

    @TempDir
    Path work;

    @Test
    void engineAppliesSparseDeltaFilesThroughUpdateWeightsFromDisk() throws Exception {
        SlimeCompat.Outcome o = SlimeCompat.run(work, 4L << 20, 2);
        assertTrue(o.digestsMatch(), "engine serves " + o.engineDigest() + ", trainer has " + o.trainerDigest());
        assertEquals(2, o.manifests().size());
        ObjectMapper json = new ObjectMapper();
        for (Manifest m : o.manifests()) {
            assertEquals("sparse_delta", m.backend());
            assertEquals("delta", m.loadFormat());
            assertTrue(!m.transitionFiles().isEmpty());
            // Exactly one delta load per version, naming that version's files (docs/protocol/sync-and-engines.md §7.2).
            List<JsonNode> loads = new ArrayList<>();
            for (String call : o.engineCalls()) {
                JsonNode body = json.readTree(call.substring(call.indexOf('{')));
                if (call.startsWith("POST /update_weights_from_disk")
                        && body.path("weight_version").asText().equals(Long.toString(m.version()))) {
                    loads.add(body);
                }
            }
            assertEquals(1, loads.size(), o.engineCalls().toString());
            JsonNode load = loads.get(0);
            assertEquals("delta", load.path("load_format").asText());
            assertEquals(false, load.path("flush_cache").asBoolean(true));
            List<String> files = new ArrayList<>();
            load.path("files").forEach(f -> files.add(f.asText()));
            assertEquals(m.transitionFiles(), files);
            assertTrue(load.path("model_path").asText().endsWith(String.format("weight_v%06d", m.version())), load.toString());
        }
    }
}
