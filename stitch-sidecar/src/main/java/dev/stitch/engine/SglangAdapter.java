package dev.stitch.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.sync.EngineAdapter;
import dev.stitch.sync.EngineReport;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The calls both SGLang modes share: label, flush, pause/continue, abort, health and model info.
 * Bodies never carry {@code "flush_cache": true} (SGLang's post-update flush kills the scheduler
 * when requests are live).
 */
abstract sealed class SglangAdapter implements EngineAdapter permits SglangEngineAdapter, SglangHostAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(SglangAdapter.class);
    private static final Duration SHORT = Duration.ofSeconds(10);
    private static final Duration PROBE = Duration.ofSeconds(2);

    final SglangSettings settings;
    final SglangClient client;

    SglangAdapter(SglangSettings settings) {
        this.settings = settings;
        this.client = new SglangClient(settings.upstream(), settings.connectTimeout(), settings.requestTimeout());
    }

    /** Creates the adapter of {@code mode} ({@code engine} or {@code host}). */
    static EngineAdapter create(String mode, SglangSettings settings) {
        return switch (mode) {
            case "engine" -> new SglangEngineAdapter(settings);
            case "host" -> new SglangHostAdapter(settings);
            default -> throw new IllegalArgumentException("engine mode must be engine or host, not '" + mode + "'");
        };
    }

    @Override
    public String name() {
        return "sglang";
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public void label(long version) throws IOException {
        ObjectNode body = SglangClient.object();
        body.put("new_version", Long.toString(version));
        body.put("abort_all_requests", false);
        client.post("/update_weight_version", body);
    }

    /** {@code GET /flush_cache}: 200/404 fine; 400 (requests running) retried, then ignored. */
    @Override
    public void flush() {
        for (int attempt = 0; attempt <= settings.flushRetries(); attempt++) {
            SglangClient.Reply r;
            try {
                r = client.get("/flush_cache", SHORT);
            } catch (IOException e) {
                LOG.warn("flush_cache failed: {}", e.getMessage());
                return;
            }
            if (r.status() == 200 || r.status() == 404) {
                return;
            }
            if (r.status() != 400) {
                LOG.warn("flush_cache answered {}; continuing without a flush", r.status());
                return;
            }
            if (attempt < settings.flushRetries()) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
        LOG.info("flush_cache still busy after {} retries; continuing (the extra_key namespace isolates versions)",
                settings.flushRetries());
    }

    @Override
    public void pause(String mode) throws IOException {
        ObjectNode body = SglangClient.object();
        body.put("mode", mode);
        client.post("/pause_generation", body);
    }

    @Override
    public void resume() throws IOException {
        client.post("/continue_generation", SglangClient.object());
    }

    @Override
    public void abort(String rid) {
        ObjectNode body = SglangClient.object();
        body.put("rid", rid);
        try {
            SglangClient.Reply r = client.send("/abort_request", body, SHORT);
            if (r.status() / 100 != 2) {
                LOG.warn("abort_request {} answered {}", rid, r.status());
            }
        } catch (IOException e) {
            LOG.warn("abort_request {} failed: {}", rid, e.getMessage());
        }
    }

    @Override
    public boolean probe() {
        try {
            // short: an engine that hangs must turn readiness 503 about as fast as one that refuses (6.5)
            return client.get("/health", PROBE).status() == 200;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public Optional<String> weightVersionLabel() {
        try {
            JsonNode info = modelInfo();
            JsonNode v = info.get("weight_version");
            return v == null || v.isNull() ? Optional.empty() : Optional.of(v.asText());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    @Override
    public Optional<EngineReport> report() {
        if (!probe()) {
            return Optional.empty();
        }
        try {
            JsonNode info = modelInfo();
            return Optional.of(new EngineReport(text(info, "weight_version"), text(info, "weights_digest"),
                    text(info, "model_path")));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static String text(JsonNode info, String field) {
        JsonNode v = info.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    /** True when {@code reported} (a path as the engine reports it) names {@code dir}. */
    static boolean samePath(String reported, java.nio.file.Path dir) {
        return reported != null && dir != null && java.nio.file.Path.of(reported).toAbsolutePath().normalize()
                .equals(dir.toAbsolutePath().normalize());
    }

    /** A fresh SGLang reports its boot label ({@code "default"}); a reset by the sidecar labels it 0. */
    static boolean baseLabel(String label) {
        return label == null || "default".equals(label) || "0".equals(label);
    }

    JsonNode modelInfo() throws IOException {
        SglangClient.Reply r = client.get("/model_info", SHORT);
        if (r.status() != 200 || !r.json().isObject()) {
            throw new IOException("GET /model_info answered " + r.status());
        }
        return r.json();
    }

    /** The common reload body; {@code load_format} only when given. */
    static ObjectNode reloadBody(String modelPath, String loadFormat, long version) {
        ObjectNode body = SglangClient.object();
        body.put("model_path", modelPath);
        if (loadFormat != null) {
            body.put("load_format", loadFormat);
        }
        body.put("weight_version", Long.toString(version));
        body.put("flush_cache", false);
        return body;
    }
}
