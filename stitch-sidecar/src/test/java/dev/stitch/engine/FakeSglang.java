package dev.stitch.engine;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;

/** A scripted SGLang control API on loopback that records every call. */
final class FakeSglang implements AutoCloseable {

    record Call(String method, String path, String body) {
    }

    /** A scripted answer. */
    record Answer(int status, String body) {
    }

    private final HttpServer server;
    private final List<Call> calls = new ArrayList<>();
    private final Map<String, List<Answer>> scripted = new ConcurrentHashMap<>();
    volatile String modelInfo = "{\"model_path\": \"/models/base\", \"weight_version\": \"default\"}";

    FakeSglang() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/", this::handle);
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** Answers the next calls of {@code path} with these, in order (then the default). */
    void script(String path, Answer... answers) {
        scripted.computeIfAbsent(path, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                .addAll(List.of(answers));
    }

    synchronized List<Call> calls() {
        return List.copyOf(calls);
    }

    synchronized List<Call> calls(String path) {
        return calls.stream().filter(c -> c.path().equals(path)).toList();
    }

    synchronized void clear() {
        calls.clear();
    }

    private void handle(HttpExchange ex) throws IOException {
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        String path = ex.getRequestURI().getPath();
        synchronized (this) {
            calls.add(new Call(ex.getRequestMethod(), path, body));
        }
        Answer a = null;
        List<Answer> queue = scripted.get(path);
        if (queue != null) {
            synchronized (queue) {
                if (!queue.isEmpty()) {
                    a = queue.remove(0);
                }
            }
        }
        if (a == null) {
            a = switch (path) {
                case "/model_info" -> new Answer(200, modelInfo);
                case "/health", "/flush_cache", "/abort_request" -> new Answer(200, "");
                case "/update_weights_from_disk" -> body.contains("\"files\":[]")
                        ? new Answer(400, "{\"success\": false, \"message\": \"load_format='delta' requires "
                                + "non-empty ``files``\"}")
                        : new Answer(200, "{\"success\": true, \"message\": \"ok\", \"num_paused_requests\": 0}");
                default -> new Answer(200, "{\"success\": true, \"status\": \"ok\"}");
            };
        }
        byte[] out = a.body().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(a.status(), out.length == 0 ? -1 : out.length);
        if (out.length > 0) {
            try (OutputStream os = ex.getResponseBody()) {
                os.write(out);
            }
        }
        ex.close();
    }

    @Override
    public void close() {
        server.stop(0);
        ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
    }
}
