package dev.stitch.engine;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.apply.HostApplier;
import dev.stitch.sync.EngineAdapter;
import dev.stitch.sync.SyncPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Host-mode local checkpoint handling and request bodies (docs/protocol/sync-and-engines.md §7.3). */
class SglangHostAdapterTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURES = Fixtures.root();

    @TempDir
    Path tmp;
    private Path base;
    private Path local;
    private FakeSglang sglang;

    @BeforeEach
    void setUp() throws Exception {
        base = Files.createDirectories(tmp.resolve("base"));
        Files.copy(FIXTURES.resolve("sparse-v1/base.safetensors"), base.resolve("model.safetensors"));
        Files.writeString(base.resolve("config.json"), "{\"architectures\": [\"Tiny\"]}");
        local = tmp.resolve("local");
        sglang = new FakeSglang();
    }

    @AfterEach
    void tearDown() {
        sglang.close();
    }

    private EngineAdapter adapter(boolean partialReload) {
        return SglangAdapters.create("host", SglangSettings.of(sglang.url(), tmp.resolve("board"))
                .withHostCheckpoints(local, base).withOptions(1, partialReload, true)
                .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(5)));
    }

    private JsonNode state() throws Exception {
        return JSON.readTree(local.resolve(".weight_sync/state.json").toFile());
    }

    @Test
    void prepareCopiesTheBaseOnceAndFingerprintsIt() throws Exception {
        EngineAdapter a = adapter(false);
        a.prepare();
        assertArrayEquals(Files.readAllBytes(base.resolve("model.safetensors")),
                Files.readAllBytes(local.resolve("model.safetensors")));
        assertTrue(Files.exists(local.resolve("config.json")));
        JsonNode s = state();
        assertEquals("000000", s.path("version").asText());
        assertTrue(s.path("applying").isNull());
        assertEquals(HostApplier.fingerprint(base), s.path("base_fingerprint").asText());
        assertTrue(s.path("base_fingerprint").asText().startsWith("sha256:"));

        // a clean copy of the same base is kept as is
        FileTime stamp = FileTime.fromMillis(1_000_000L);
        Files.setLastModifiedTime(local.resolve("model.safetensors"), stamp);
        a.prepare();
        assertEquals(stamp, Files.getLastModifiedTime(local.resolve("model.safetensors")));

        // an interrupted apply forces a rebuild
        ObjectNode dirty = (ObjectNode) state();
        dirty.put("applying", "000003");
        Files.write(local.resolve(".weight_sync/state.json"), JSON.writeValueAsBytes(dirty));
        Files.write(local.resolve("model.safetensors"), new byte[] {1, 2, 3});
        a.prepare();
        assertArrayEquals(Files.readAllBytes(base.resolve("model.safetensors")),
                Files.readAllBytes(local.resolve("model.safetensors")));
        assertTrue(state().path("applying").isNull());
        assertEquals(0, a.planFrom(4, "run-a", 9));
    }

    @Test
    void commitIsOneReloadOfTheLocalDirectory() throws Exception {
        EngineAdapter a = adapter(false);
        a.prepare();
        sglang.clear();
        SyncPlan plan = new SyncPlan(SyncPlan.Kind.DELTA, "run-a", 3, 5, Optional.empty(), List.of(),
                Set.of("b", "a"), true);
        a.commit(plan);
        a.label(6);
        a.reset();
        List<FakeSglang.Call> calls = sglang.calls();
        assertEquals("/update_weights_from_disk", calls.get(0).path());
        assertEquals("{\"model_path\":" + JSON.writeValueAsString(local.toString())
                + ",\"weight_version\":\"5\",\"flush_cache\":false}", calls.get(0).body());
        assertEquals("{\"new_version\":\"6\",\"abort_all_requests\":false}", calls.get(1).body());
        assertEquals("{\"model_path\":" + JSON.writeValueAsString(local.toString())
                + ",\"weight_version\":\"0\",\"flush_cache\":false}", calls.get(2).body());

        EngineAdapter partial = adapter(true);
        sglang.clear();
        partial.commit(plan);
        assertEquals("[\"a\",\"b\"]", JSON.readTree(sglang.calls().get(0).body()).path("weight_names").toString());
    }

    @Test
    void planStartsFromTheLocalCopy() throws Exception {
        EngineAdapter a = adapter(false);
        a.prepare();
        assertEquals(0, a.planFrom(0, "run-a", 3));
        ObjectNode s = (ObjectNode) state();
        s.put("version", "000002");
        s.put("run_id", "run-a");
        Files.write(local.resolve(".weight_sync/state.json"), JSON.writeValueAsBytes(s));
        assertEquals(2, a.planFrom(0, "run-a", 3), "a local copy ahead of the engine is reused");
        assertEquals(0, a.planFrom(0, "run-a", 1), "a copy newer than the board's latest is rebuilt");
        assertEquals(0, a.planFrom(0, "run-b", 3), "a copy of another run is rebuilt");
    }
}
