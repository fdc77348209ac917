package dev.stitch.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Blocking JSON calls to SGLang's control API (docs/protocol/sync-and-engines.md §7.4). Used only from the sync
 * worker, so blocking is fine; a failure is a non-2xx status or a JSON body with {@code "success": false}.
 */
final class SglangClient {

    static final ObjectMapper JSON = new ObjectMapper();

    /** A raw answer: status and body text. */
    record Reply(int status, String body) {
        JsonNode json() {
            try {
                return body.isBlank() ? JSON.nullNode() : JSON.readTree(body);
            } catch (IOException e) {
                return JSON.nullNode();
            }
        }
    }

    /**
     * The engine answered and refused the call (a 4xx status, or a 2xx with {@code "success": false}),
     * as opposed to failing to answer or failing internally (5xx): sending the same body again cannot help.
     */
    static final class Refused extends IOException {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }

    private final URI base;
    private final HttpClient http;
    private final Duration requestTimeout;

    SglangClient(URI base, Duration connectTimeout, Duration requestTimeout) {
        String s = base.toString();
        this.base = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
        this.http = HttpClient.newBuilder().connectTimeout(connectTimeout).version(HttpClient.Version.HTTP_1_1)
                .build();
        this.requestTimeout = requestTimeout;
    }

    URI base() {
        return base;
    }

    /**
     * POSTs {@code body} and requires success.
     *
     * @throws Refused when the engine answers 4xx or {@code "success": false}
     */
    JsonNode post(String path, ObjectNode body) throws IOException {
        Reply r = send(path, body, requestTimeout);
        JsonNode json = r.json();
        if (r.status() / 100 == 4) {
            throw new Refused("POST " + path + " answered " + r.status() + ": " + brief(r.body()));
        }
        if (r.status() / 100 != 2) {
            throw new IOException("POST " + path + " answered " + r.status() + ": " + brief(r.body()));
        }
        if (json.isObject() && json.path("success").isBoolean() && !json.path("success").asBoolean()) {
            throw new Refused("POST " + path + " reported success=false: "
                    + brief(json.path("message").asText(r.body())));
        }
        return json;
    }

    /** POSTs {@code body} and returns whatever came back (no success check). */
    Reply send(String path, ObjectNode body, Duration timeout) throws IOException {
        HttpRequest req = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build();
        return exchange(req);
    }

    /** GETs {@code path}. */
    Reply get(String path, Duration timeout) throws IOException {
        return exchange(HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).GET().build());
    }

    private Reply exchange(HttpRequest req) throws IOException {
        try {
            HttpResponse<String> resp = http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            return new Reply(resp.statusCode(), resp.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(req.method() + " " + req.uri().getPath() + " interrupted", e);
        } catch (IOException e) {
            throw new IOException(req.method() + " " + req.uri().getPath() + " failed: " + e, e);
        }
    }

    /** Closes the pooled connections. */
    void close() {
        http.close();
    }

    static ObjectNode object() {
        return JSON.createObjectNode();
    }

    private static String brief(String text) {
        String t = text == null ? "" : text.strip();
        return t.length() > 300 ? t.substring(0, 300) + "…" : t;
    }
}
