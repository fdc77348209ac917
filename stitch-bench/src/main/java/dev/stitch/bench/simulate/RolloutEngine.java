package dev.stitch.bench.simulate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.refengine.ReferenceEngine;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The rollout host's inference engine in the simulation: the project's reference engine serving the
 * local checkpoint, reloaded through SGLang's {@code /update_weights_from_disk} (a full reload in host
 * mode, {@code load_format: "delta"} in engine mode) and probed with one {@code /generate} request,
 * whose stamped version and weights digest prove v+1 is being served.
 */
final class RolloutEngine implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ReferenceEngine engine;
    private final HttpClient http;
    private RolloutEngine(ReferenceEngine engine) {
        this.engine = engine;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    }

    /** Boots the engine on {@code checkpoint} (loopback, free port, no token latency). */
    static RolloutEngine boot(Path checkpoint) throws IOException {
        ReferenceEngine e = new ReferenceEngine(ReferenceEngine.Config.local(checkpoint)).start();
        return new RolloutEngine(e);
    }

    /**
     * Full reload of the local checkpoint {@code checkpoint} labelled {@code version}, then one generate
     * request; fails unless that response is stamped {@code version} with digest {@code expectedDigest}.
     */
    void reloadAndServe(Path checkpoint, String version, String expectedDigest) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode().put("model_path", checkpoint.toAbsolutePath().toString())
                .put("load_format", "auto").put("weight_version", version);
        load("engine reload", body);
        serve(version, expectedDigest);
    }

    /**
     * Engine mode (docs/protocol/sync-and-engines.md §7.2): the engine applies the {@code sparse_delta} files
     * {@code files} (relative to {@code versionDir}) to the weights it serves, in place, labelled
     * {@code version}; then one generate request, checked as {@link #reloadAndServe} checks it.
     *
     * @return CPU nanoseconds the engine's loading thread spent on the apply
     */
    long applyInPlaceAndServe(Path versionDir, List<String> files, String version, String expectedDigest)
            throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode().put("model_path", versionDir.toAbsolutePath().toString())
                .put("load_format", "delta").put("weight_version", version).put("flush_cache", false);
        ArrayNode list = body.putArray("files");
        files.forEach(list::add);
        long cpuBefore = Math.max(0, engine.loaderCpuNanos());
        load("engine in-place delta apply", body);
        long cpu = engine.loaderCpuNanos() - cpuBefore;
        serve(version, expectedDigest);
        if (cpu <= 0) {
            throw new IOException("this JVM cannot measure the CPU time of the engine's loading thread");
        }
        return cpu;
    }

    private void load(String what, ObjectNode body) throws IOException, InterruptedException {
        JsonNode answer = post("/update_weights_from_disk", body.toString());
        if (!answer.path("success").asBoolean(false)) {
            throw new IOException(what + " failed: " + answer.path("message").asText(answer.toString()));
        }
    }

    private void serve(String version, String expectedDigest) throws IOException, InterruptedException {
        JsonNode served = post("/generate", "{\"text\": \"ping\", \"sampling_params\": {\"max_new_tokens\": 1}}");
        JsonNode meta = served.path("meta_info");
        if (!version.equals(meta.path("weight_version").asText())) {
            throw new IOException("first response after the weight update is stamped " + meta.path("weight_version")
                    + ", expected " + version);
        }
        if (expectedDigest != null && !expectedDigest.equals(meta.path("weights_digest").asText())) {
            throw new IOException("engine serves weights " + meta.path("weights_digest").asText()
                    + " but the trainer published " + expectedDigest);
        }
    }

    private JsonNode post(String path, String body) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofMinutes(10))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString());
        JsonNode node;
        try {
            node = JSON.readTree(resp.body());
        } catch (IOException e) {
            throw new IOException(path + " answered " + resp.statusCode() + " with a body that is not JSON", e);
        }
        if (resp.statusCode() != 200 && !path.equals("/update_weights_from_disk")) {
            throw new IOException(path + " answered " + resp.statusCode() + ": " + resp.body());
        }
        return node;
    }

    @Override
    public void close() {
        engine.close();
        http.close();
    }
}
