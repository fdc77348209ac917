package dev.stitch.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.protocol.Artifact;
import dev.stitch.sync.EngineAdapter;
import dev.stitch.sync.SyncPlan;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Engine-mode request bodies (docs/protocol/sync-and-engines.md §7.2) against a scripted SGLang. */
class SglangEngineAdapterTest {

    private static final Path BOARD = Path.of("/data/board");
    private FakeSglang sglang;
    private EngineAdapter adapter;

    @BeforeEach
    void setUp() throws IOException {
        sglang = new FakeSglang();
        adapter = SglangAdapters.create("engine", SglangSettings.of(sglang.url(), BOARD)
                .withEnginePaths(Path.of("/mnt/board"), null)
                .withOptions(2, false, true)
                .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(5)));
    }

    @AfterEach
    void tearDown() {
        sglang.close();
    }

    private static VersionStep version(long v, List<String> files, boolean anchor) {
        Map<String, Artifact> arts = new LinkedHashMap<>();
        files.forEach(f -> arts.put(f, new Artifact("transition", f, 10L, null, null)));
        if (anchor) {
            arts.put("full/model.safetensors", new Artifact("full", "full/model.safetensors", 100L, null, null));
        }
        return new VersionStep(v, v - 1, null, "sparse_delta", "delta",
                BOARD.resolve("versions").resolve(String.format("weight_v%06d", v)), files, List.of(), arts, false);
    }

    private static SyncPlan plan(long from, long to, Optional<VersionStep> anchor, List<VersionStep> deltas) {
        return new SyncPlan(anchor.isPresent() ? SyncPlan.Kind.ANCHOR : SyncPlan.Kind.DELTA, null, from, to, anchor,
                deltas, Set.of(), false);
    }

    @Test
    void commitSendsOneCallPerVersionInOrder() throws Exception {
        adapter.prepare();
        sglang.clear();
        adapter.commit(plan(3, 6, Optional.empty(), List.of(
                version(4, List.of("rank0000_flush000000.safetensors", "rank0001_flush000000.safetensors"), false),
                version(5, List.of(), false),
                version(6, List.of("rank0000_flush000000.safetensors"), false))));
        List<FakeSglang.Call> calls = sglang.calls();
        assertEquals(3, calls.size());
        assertEquals("/update_weights_from_disk", calls.get(0).path());
        assertEquals("{\"model_path\":\"/mnt/board/versions/weight_v000004\",\"files\":"
                + "[\"rank0000_flush000000.safetensors\",\"rank0001_flush000000.safetensors\"],"
                + "\"load_format\":\"delta\",\"weight_version\":\"4\",\"flush_cache\":false}", calls.get(0).body());
        assertEquals("/update_weight_version", calls.get(1).path());
        assertEquals("{\"new_version\":\"5\",\"abort_all_requests\":false}", calls.get(1).body());
        assertEquals("{\"model_path\":\"/mnt/board/versions/weight_v000006\",\"files\":"
                + "[\"rank0000_flush000000.safetensors\"],\"load_format\":\"delta\",\"weight_version\":\"6\","
                + "\"flush_cache\":false}", calls.get(2).body());
    }

    @Test
    void anchorPathLoadsTheFullCheckpointFirst() throws Exception {
        adapter.prepare();
        sglang.clear();
        adapter.commit(plan(0, 21, Optional.of(version(20, List.of("x.safetensors"), true)),
                List.of(version(21, List.of("rank0000_flush000000.safetensors"), false))));
        List<FakeSglang.Call> calls = sglang.calls();
        assertEquals("{\"model_path\":\"/mnt/board/versions/weight_v000020/full\",\"load_format\":\"auto\","
                + "\"weight_version\":\"20\",\"flush_cache\":false}", calls.get(0).body());
        assertTrue(calls.get(1).body().contains("\"weight_version\":\"21\""));
        assertEquals(2, calls.size());
    }

    @Test
    void resetReloadsTheBaseReportedByModelInfo() throws Exception {
        adapter.prepare();
        sglang.clear();
        adapter.reset();
        assertEquals("{\"model_path\":\"/models/base\",\"load_format\":\"auto\",\"weight_version\":\"0\","
                + "\"flush_cache\":false}", sglang.calls("/update_weights_from_disk").get(0).body());
    }

    @Test
    void prepareRefusesAnEngineWithoutTheDeltaReceiver() {
        sglang.script("/update_weights_from_disk", new FakeSglang.Answer(400,
                "{\"success\": false, \"message\": \"Unknown load format delta\"}"));
        IOException e = assertThrows(IOException.class, adapter::prepare);
        assertTrue(e.getMessage().contains("no delta receiver"), e.getMessage());
    }

    @Test
    void non2xxAndSuccessFalseAreFailures() throws Exception {
        adapter.prepare();
        sglang.script("/update_weights_from_disk", new FakeSglang.Answer(500, "boom"));
        SyncPlan p = plan(0, 1, Optional.empty(), List.of(version(1, List.of("a.safetensors"), false)));
        IOException e = assertThrows(IOException.class, () -> adapter.commit(p));
        assertTrue(e.getMessage().contains("500"), e.getMessage());
        // a delta load the engine refuses is a refused version, not a failure worth retrying
        sglang.script("/update_weights_from_disk", new FakeSglang.Answer(200,
                "{\"success\": false, \"message\": \"bad shard\"}"));
        RefusedVersionException refused = assertThrows(RefusedVersionException.class, () -> adapter.commit(p));
        assertEquals(1, refused.version());
        assertTrue(refused.getMessage().contains("bad shard"), refused.getMessage());
        sglang.script("/update_weights_from_disk", new FakeSglang.Answer(400,
                "{\"success\": false, \"message\": \"Failed to apply delta update from disk: shape\"}"));
        refused = assertThrows(RefusedVersionException.class, () -> adapter.commit(p));
        assertEquals(RefusedVersionException.Reason.MALFORMED, refused.reason());
        sglang.script("/update_weight_version", new FakeSglang.Answer(200, "{\"success\": false, \"message\": \"no\"}"));
        assertThrows(IOException.class, () -> adapter.label(3));
        adapter.commit(p);
    }

    @Test
    void aDeltaAfterWhichTheEngineReportsOtherWeightsIsRefusedAsAWrongBase() throws Exception {
        adapter.prepare();
        sglang.clear();
        SyncPlan p = plan(3, 5, Optional.empty(), List.of(version(4, List.of("a.safetensors"), false),
                version(5, List.of("b.safetensors"), false)))
                .withWeightsDigests(Map.of(4L, "xxh3-128:04", 5L, "xxh3-128:05"));
        sglang.modelInfo = "{\"model_path\": \"/models/base\", \"weight_version\": \"4\", "
                + "\"weights_digest\": \"xxh3-128:04\"}";
        sglang.script("/model_info", new FakeSglang.Answer(200, sglang.modelInfo), new FakeSglang.Answer(200,
                "{\"weight_version\": \"5\", \"weights_digest\": \"xxh3-128:ff\"}"));
        RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> adapter.commit(p));
        assertEquals(5, e.version());
        assertEquals(RefusedVersionException.Reason.WRONG_BASE, e.reason());
        assertTrue(e.getMessage().contains("xxh3-128:ff") && e.getMessage().contains("xxh3-128:05"), e.getMessage());
        assertEquals(List.of("/update_weights_from_disk", "/model_info", "/update_weights_from_disk", "/model_info"),
                sglang.calls().stream().map(FakeSglang.Call::path).toList());

        // the right weights pass; an engine that reports no digest (stock SGLang) is not checked
        sglang.script("/model_info", new FakeSglang.Answer(200, "{\"weights_digest\": \"xxh3-128:04\"}"),
                new FakeSglang.Answer(200, "{\"weights_digest\": \"xxh3-128:05\"}"));
        assertEquals(2, adapter.commit(p).get("digest_checks"));
        sglang.modelInfo = "{\"model_path\": \"/models/base\", \"weight_version\": \"5\"}";
        assertEquals(0, adapter.commit(p).get("digest_checks"));
    }

    @Test
    void flushToleratesNotFoundAndRetriesBusy() {
        sglang.script("/flush_cache", new FakeSglang.Answer(404, ""));
        adapter.flush();
        assertEquals(1, sglang.calls("/flush_cache").size());
        sglang.clear();
        sglang.script("/flush_cache", new FakeSglang.Answer(400, "busy"), new FakeSglang.Answer(200, ""));
        adapter.flush();
        assertEquals(2, sglang.calls("/flush_cache").size());
        sglang.clear();
        sglang.script("/flush_cache", new FakeSglang.Answer(400, "busy"), new FakeSglang.Answer(400, "busy"),
                new FakeSglang.Answer(400, "busy"), new FakeSglang.Answer(400, "busy"));
        adapter.flush(); // flush_retries = 2: three tries, then ignored
        assertEquals(3, sglang.calls("/flush_cache").size());
    }

    @Test
    void controlCallsAndNoFlushCacheTrueAnywhere() throws Exception {
        adapter.prepare();
        adapter.pause("in_place");
        adapter.resume();
        adapter.abort("rid-1");
        adapter.label(7);
        adapter.reset();
        adapter.commit(plan(0, 1, Optional.empty(), List.of(version(1, List.of("a.safetensors"), false))));
        assertTrue(adapter.probe());
        assertEquals(Optional.of("default"), adapter.weightVersionLabel());
        assertEquals("{\"mode\":\"in_place\"}", sglang.calls("/pause_generation").get(0).body());
        assertEquals("{}", sglang.calls("/continue_generation").get(0).body());
        assertEquals("{\"rid\":\"rid-1\"}", sglang.calls("/abort_request").get(0).body());
        for (FakeSglang.Call c : sglang.calls()) {
            assertFalse(c.body().replace(" ", "").contains("\"flush_cache\":true"), c.toString());
        }
        sglang.script("/health", new FakeSglang.Answer(503, ""));
        assertFalse(adapter.probe());
    }
}
