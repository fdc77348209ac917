package dev.stitch.sidecar.proxy;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sync.AdmissionGate;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The proxy in front of the reference engine: real SSE, real stamps, real aborts. */
class ProxyWithReferenceEngineTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURES = Fixtures.root();

    @TempDir
    Path tmp;
    private ReferenceEngine engine;
    private AdmissionGate gate;
    private ProxyServer proxy;
    private RecordingEndpoints endpoints;

    @BeforeEach
    void start() throws Exception {
        Path model = Files.createDirectories(tmp.resolve("model"));
        Files.copy(FIXTURES.resolve("disk-v2/base/model.safetensors"), model.resolve("model.safetensors"));
        engine = new ReferenceEngine(ReferenceEngine.Config.local(model).withTokenLatency(Duration.ofMillis(20))).start();
        gate = new AdmissionGate("run-a", 2);
        endpoints = new RecordingEndpoints();
        proxy = new ProxyServer(ProxyServer.Config.defaults(URI.create(engine.url())).withListen("127.0.0.1", 0)
                .withIoThreads(1), gate, endpoints).start();
        relabelEngine("2"); // what the sidecar's commit of version 2 leaves the engine labelled
    }

    private void relabelEngine(String label) throws Exception {
        RawHttp.Response r = RawHttp.postJson(engine.port(), "/update_weight_version",
                "{\"new_version\":\"" + label + "\"}");
        assertEquals(200, r.status(), r.text());
    }

    @AfterEach
    void stop() {
        proxy.close();
        engine.close();
    }

    @Test
    void generateIsStampedOverTheEngineLabel() throws Exception {
        RawHttp.Response r = RawHttp.postJson(proxy.port(), "/generate",
                "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2},\"weight_version\":{\"min_version\":1}}");
        assertEquals(200, r.status());
        JsonNode meta = JSON.readTree(r.body()).path("meta_info");
        assertEquals("2", meta.path("weight_version").asText());
        assertEquals(2, meta.path("weight_version_start").asInt());
        assertEquals(2, meta.path("weight_version_end").asInt());
        assertEquals(engine.weightsDigest(), meta.path("weights_digest").asText());
        assertEquals("run-a", r.header("x-stitch-run-id"));
        JsonNode forwarded = engine.calls("generate").getLast().json();
        assertEquals("wv2;run-a/", forwarded.path("extra_key").asText());
        assertTrue(forwarded.path("rid").asText().matches("[0-9a-f]{32}"));
    }

    @Test
    void streamingThroughTheProxyAndDisconnectAbortsTheGeneration() throws Exception {
        try (RawHttp c = new RawHttp(proxy.port())) {
            c.send("POST", "/generate", "{\"text\":\"hi\",\"stream\":true,\"rid\":\"s1\",\"sampling_params\":{\"max_new_tokens\":10000}}"
                    .getBytes(StandardCharsets.UTF_8), "Content-Type: application/json");
            RawHttp.Response head = c.readHead();
            assertEquals("2", head.header("x-stitch-weight-version-start"));
            String first = new String(c.readChunk(), StandardCharsets.UTF_8);
            assertTrue(first.startsWith("data: {"), first);
            assertEquals(1, engine.activeRequests());
            assertEquals(1, gate.activeRequests());
        }
        ProxyServerTest.waitFor(() -> engine.activeRequests() == 0);
        ProxyServerTest.waitFor(() -> gate.activeRequests() == 0);
        ProxyServerTest.waitFor(() -> !engine.calls("abort_request").isEmpty());
        assertEquals("{\"rid\":\"s1\"}", engine.calls("abort_request").getFirst().body());
    }

    @Test
    void anEngineThatNoLongerCarriesTheCommittedLabelGets503NeverAFalseStamp() throws Exception {
        relabelEngine("default"); // as after a restart from its base checkpoint
        RawHttp.Response r = RawHttp.postJson(proxy.port(), "/generate",
                "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2}}");
        assertEquals(503, r.status(), r.text());
        assertEquals("EngineUnavailable", JSON.readTree(r.body()).path("error").path("type").asText());
        assertEquals("1", r.header("retry-after"));
        assertEquals(null, r.header("x-stitch-weight-version-start"));
        assertEquals(1, endpoints.suspicions.size());
        assertTrue(endpoints.suspicions.getFirst().contains("weight_version default"), endpoints.suspicions.toString());

        // a stream's head waits for its first event, so it too is answered 503 before anything went out
        RawHttp.Response s = RawHttp.postJson(proxy.port(), "/generate",
                "{\"text\":\"hi\",\"stream\":true,\"rid\":\"s2\",\"sampling_params\":{\"max_new_tokens\":10000}}");
        assertEquals(503, s.status(), s.text());
        assertEquals(null, s.header("x-stitch-weight-version-start"));
        ProxyServerTest.waitFor(() -> engine.activeRequests() == 0);
        ProxyServerTest.waitFor(() -> gate.activeRequests() == 0);
        assertEquals(2, endpoints.suspicions.size());

        // OpenAI responses carry the label in metadata
        RawHttp.Response c = RawHttp.postJson(proxy.port(), "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":2}");
        assertEquals(503, c.status(), c.text());
        relabelEngine("2");
        assertEquals(200, RawHttp.postJson(proxy.port(), "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":2}")
                .status());
    }

    @Test
    void completedStreamEndsWithDoneAndTheEndComment() throws Exception {
        RawHttp.Response r = RawHttp.postJson(proxy.port(), "/v1/completions",
                "{\"prompt\":\"hi\",\"max_tokens\":3,\"stream\":true}");
        String body = r.text();
        assertTrue(body.endsWith("data: [DONE]\n\n: x-stitch-weight-version-end=2\n\n"), body);
        assertEquals(0, gate.activeRequests());
    }
}
