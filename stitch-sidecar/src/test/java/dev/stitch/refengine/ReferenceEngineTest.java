package dev.stitch.refengine;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reference engine's SGLang surface (docs/protocol/sync-and-engines.md §7.4) over loopback. */
class ReferenceEngineTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURES = Fixtures.root();
    private static final Path SPARSE = FIXTURES.resolve("sparse-v1");

    @TempDir
    Path tmp;
    private ReferenceEngine engine;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    @AfterEach
    void stop() {
        if (engine != null) {
            engine.close();
        }
    }

    private Path checkpoint(String fixture) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(fixture.replace('/', '_').replace(".safetensors", "")));
        Files.copy(SPARSE.resolve(fixture), dir.resolve("model.safetensors"));
        return dir;
    }

    private ReferenceEngine start(Duration tokenLatency) throws IOException {
        engine = new ReferenceEngine(ReferenceEngine.Config.local(checkpoint("base.safetensors")).withTokenLatency(tokenLatency)).start();
        return engine;
    }

    private static String digestOf(Path dir) throws IOException {
        try (Checkpoint c = Checkpoint.open(dir)) {
            Map<String, MemorySegment> t = new LinkedHashMap<>();
            for (String n : c.names()) {
                t.put(n, c.tensor(n));
            }
            return WeightsDigest.of(t);
        }
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> postAsync(String path, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(20)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> getAsync(String path) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(20)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void generateIsDeterministicInPromptAndWeights() throws Exception {
        start(Duration.ZERO);
        String digest = digestOf(tmp.resolve("base"));
        assertEquals(digest, engine.weightsDigest());
        JsonNode a = JSON.readTree(post("/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":4},\"rid\":\"r1\"}").body());
        JsonNode b = JSON.readTree(post("/generate", "{\"text\":\"hello\",\"sampling_params\":{\"max_new_tokens\":4}}").body());
        JsonNode c = JSON.readTree(post("/generate", "{\"text\":\"other\",\"sampling_params\":{\"max_new_tokens\":4}}").body());
        assertEquals(4, a.path("output_ids").size());
        assertEquals(a.path("output_ids"), b.path("output_ids"));
        assertNotEquals(a.path("output_ids"), c.path("output_ids"));
        JsonNode meta = a.path("meta_info");
        assertEquals("r1", meta.path("id").asText());
        assertEquals("length", meta.path("finish_reason").path("type").asText());
        assertEquals("default", meta.path("weight_version").asText());
        assertEquals(digest, meta.path("weights_digest").asText());
        assertEquals(4, meta.path("completion_tokens").asInt());

        JsonNode batch = JSON.readTree(post("/generate", "{\"text\":[\"hello\",\"other\"],\"sampling_params\":{\"max_new_tokens\":4}}").body());
        assertTrue(batch.isArray());
        assertEquals(a.path("output_ids"), batch.get(0).path("output_ids"));
        assertEquals(c.path("output_ids"), batch.get(1).path("output_ids"));
    }

    @Test
    void streamingAndOpenAiShapes() throws Exception {
        start(Duration.ZERO);
        HttpResponse<String> s = post("/generate", "{\"text\":\"hi\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":3}}");
        assertTrue(s.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
        List<String> events = s.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
        assertEquals(4, events.size());
        assertEquals("[DONE]", events.getLast());
        JsonNode last = JSON.readTree(events.get(2));
        assertEquals(3, last.path("output_ids").size());
        assertEquals("length", last.path("meta_info").path("finish_reason").path("type").asText());

        JsonNode comp = JSON.readTree(post("/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":3}").body());
        assertEquals("text_completion", comp.path("object").asText());
        assertEquals("default", comp.path("metadata").path("weight_version").asText());
        assertEquals(engine.weightsDigest(), comp.path("metadata").path("weights_digest").asText());
        assertEquals(3, comp.path("usage").path("completion_tokens").asInt());
        JsonNode chat = JSON.readTree(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}").body());
        assertEquals("chat.completion", chat.path("object").asText());
        assertEquals("assistant", chat.path("choices").get(0).path("message").path("role").asText());
        HttpResponse<String> chatStream = post("/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2,\"stream\":true}");
        List<String> chunks = chatStream.body().lines().filter(l -> l.startsWith("data: {")).map(l -> l.substring(6)).toList();
        StringBuilder text = new StringBuilder();
        for (String ch : chunks) {
            JsonNode n = JSON.readTree(ch);
            assertEquals("chat.completion.chunk", n.path("object").asText());
            assertFalse(n.has("metadata"));
            text.append(n.path("choices").get(0).path("delta").path("content").asText());
        }
        assertEquals(chat.path("choices").get(0).path("message").path("content").asText(), text.toString());
    }

    @Test
    void deltaLoadAppliesSparseFilesNanMasked() throws Exception {
        start(Duration.ZERO);
        Path version = SPARSE.resolve("deltas/weight_v000001");
        String files = "[\"rank0000_flush000000.safetensors\",\"rank0000_flush000001.safetensors\",\"rank0000_flush000002.safetensors\"]";
        assertEquals(-1, engine.loaderCpuNanos(), "no load has run yet");
        HttpResponse<String> r = post("/update_weights_from_disk", "{\"model_path\":\"" + version + "\",\"files\":" + files
                + ",\"load_format\":\"delta\",\"weight_version\":\"1\",\"flush_cache\":false}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(JSON.readTree(r.body()).path("success").asBoolean());
        assertEquals(digestOf(checkpoint("new.safetensors")), engine.weightsDigest());
        assertEquals("1", engine.weightVersion());
        assertTrue(engine.loaderCpuNanos() > 0, "the delta apply ran on the loader thread and used its CPU");
        JsonNode g = JSON.readTree(post("/generate", "{\"text\":\"hi\"}").body());
        assertEquals("1", g.path("meta_info").path("weight_version").asText());
        assertEquals(engine.weightsDigest(), g.path("meta_info").path("weights_digest").asText());

        HttpResponse<String> empty = post("/update_weights_from_disk", "{\"model_path\":\"" + version + "\",\"files\":[],\"load_format\":\"delta\"}");
        assertEquals(400, empty.statusCode());
        assertEquals("{\"success\":false,\"message\":\"load_format='delta' requires non-empty ``files``\"}", empty.body());
        HttpResponse<String> missing = post("/update_weights_from_disk", "{\"model_path\":\"" + version
                + "\",\"files\":[\"nope.safetensors\"],\"load_format\":\"delta\",\"flush_cache\":false}");
        assertEquals(400, missing.statusCode());
        assertFalse(JSON.readTree(missing.body()).path("success").asBoolean(true));
        assertEquals(3, engine.calls("update_weights_from_disk").size());
    }

    @Test
    void deltaLoadKeepsBaseValuesWhereTheFileCarriesNan() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("nan-base"));
        Files.copy(SPARSE.resolve("nan/base.safetensors"), dir.resolve("model.safetensors"));
        engine = new ReferenceEngine(ReferenceEngine.Config.local(dir)).start();
        HttpResponse<String> r = post("/update_weights_from_disk", "{\"model_path\":\"" + SPARSE.resolve("nan/deltas/weight_v000001")
                + "\",\"files\":[\"rank0000_flush000000.safetensors\"],\"load_format\":\"delta\",\"weight_version\":\"1\",\"flush_cache\":false}");
        assertEquals(200, r.statusCode(), r.body());
        Path applied = Files.createDirectories(tmp.resolve("nan-applied"));
        Files.copy(SPARSE.resolve("nan/applied.safetensors"), applied.resolve("model.safetensors"));
        assertEquals(digestOf(applied), engine.weightsDigest());
    }

    @Test
    void fullReloadCopiesWeightsPrivately() throws Exception {
        start(Duration.ZERO);
        Path next = checkpoint("new.safetensors");
        String expected = digestOf(next);
        HttpResponse<String> r = post("/update_weights_from_disk", "{\"model_path\":\"" + next + "\",\"weight_version\":\"7\",\"flush_cache\":false}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(JSON.readTree(r.body()).path("message").asText().endsWith("Weight version updated to 7."));
        assertEquals(expected, engine.weightsDigest());
        // Rewriting the checkpoint in place (as host mode does) must not change what the engine serves.
        Files.write(next.resolve("model.safetensors"), new byte[16]);
        JsonNode g = JSON.readTree(post("/generate", "{\"text\":\"hi\"}").body());
        assertEquals(expected, g.path("meta_info").path("weights_digest").asText());
        assertEquals("7", JSON.readTree(get("/model_info").body()).path("weight_version").asText());
        HttpResponse<String> label = post("/update_weight_version", "{\"new_version\":\"8\",\"abort_all_requests\":false}");
        assertEquals("8", JSON.readTree(label.body()).path("new_version").asText());
        assertEquals("8", engine.weightVersion());
    }

    @Test
    void pauseBlocksGenerationAndHealthUntilContinue() throws Exception {
        start(Duration.ZERO);
        assertEquals(200, get("/health").statusCode());
        assertEquals("ok", JSON.readTree(post("/pause_generation", "{\"mode\":\"in_place\"}").body()).path("status").asText());
        CompletableFuture<HttpResponse<String>> health = getAsync("/health");
        CompletableFuture<HttpResponse<String>> gen = postAsync("/generate", "{\"text\":\"hi\"}");
        assertThrowsTimeout(health);
        assertFalse(gen.isDone());
        assertEquals("ok", JSON.readTree(post("/continue_generation", "{}").body()).path("status").asText());
        assertEquals(200, health.get(10, TimeUnit.SECONDS).statusCode());
        assertEquals("length", JSON.readTree(gen.get(10, TimeUnit.SECONDS).body()).path("meta_info").path("finish_reason").path("type").asText());
    }

    @Test
    void flushAndAbortWhileRequestsRun() throws Exception {
        start(Duration.ofMillis(50));
        CompletableFuture<HttpResponse<String>> slow = postAsync("/generate",
                "{\"text\":\"hi\",\"rid\":\"slow\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":1000}}");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (engine.activeRequests() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(400, get("/flush_cache").statusCode());
        HttpResponse<String> aborted = post("/abort_request", "{\"rid\":\"slow\"}");
        assertEquals(200, aborted.statusCode());
        String body = slow.get(10, TimeUnit.SECONDS).body();
        assertTrue(body.contains("\"type\":\"abort\""), body);
        assertTrue(body.endsWith("data: [DONE]\n\n"));
        assertEquals(200, get("/flush_cache").statusCode());

        CompletableFuture<HttpResponse<String>> again = postAsync("/generate", "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":1000}}");
        while (engine.activeRequests() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        HttpResponse<String> load = post("/update_weights_from_disk", "{\"model_path\":\"" + tmp.resolve("base") + "\"}");
        assertEquals(400, load.statusCode());
        assertFalse(engine.healthy());
        assertEquals(503, get("/health").statusCode());
        post("/pause_generation", "{\"mode\":\"abort\"}");
        assertEquals("abort", JSON.readTree(again.get(10, TimeUnit.SECONDS).body()).path("meta_info").path("finish_reason").path("type").asText());
        post("/continue_generation", "{}");
        List<String> routes = engine.calls().stream().map(ReferenceEngine.Call::route).toList();
        assertTrue(routes.containsAll(List.of("flush_cache", "abort_request", "update_weights_from_disk", "pause_generation")));
        JsonNode debug = JSON.readTree(get("/debug/calls").body());
        assertTrue(debug.isArray() && debug.size() >= routes.size());
    }

    private static void assertThrowsTimeout(CompletableFuture<?> f) throws Exception {
        try {
            f.get(300, TimeUnit.MILLISECONDS);
            throw new AssertionError("expected the call to block while paused");
        } catch (TimeoutException expected) {
            // blocked as required
        }
    }
}
