package dev.stitch.bench.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * A replica reduced to what the router benchmark measures: the {@code /stitch/state} long poll of
 * docs/protocol/router.md §3 and a {@code /generate} that admits by constraint against the version it serves,
 * answering the sidecar's 409 otherwise. No engine and no board: the benchmark moves its version.
 */
final class SimulatedReplica implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpServer server;
    private long seq;
    private long served;
    private long latestSeen;
    private boolean committing;
    private boolean closed;

    SimulatedReplica(long served) throws IOException {
        this.served = served;
        this.latestSeen = served;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/stitch/state", this::state);
        server.createContext("/generate", this::generate);
        server.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    synchronized long served() {
        return served;
    }

    /** Has seen {@code version} on the board and starts applying it. */
    synchronized void beginCommit(long version) {
        latestSeen = Math.max(latestSeen, version);
        committing = true;
        seq++;
        notifyAll();
    }

    /** Serves {@code version} from now on. */
    synchronized void finishCommit(long version) {
        served = version;
        committing = false;
        seq++;
        notifyAll();
    }

    private void state(HttpExchange ex) throws IOException {
        String q = ex.getRequestURI().getQuery();
        long after = -1;
        long timeoutMs = 1_000;
        for (String pair : q == null ? new String[0] : q.split("&")) {
            if (pair.startsWith("after=")) {
                after = Long.parseLong(pair.substring(6));
            } else if (pair.startsWith("timeout_ms=")) {
                timeoutMs = Long.parseLong(pair.substring(11));
            }
        }
        String body;
        synchronized (this) {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (seq <= after && !closed) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    break;
                }
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            body = "{\"seq\":" + seq + ",\"run_id\":\"bench\",\"served_version\":" + served + ",\"latest_seen_version\":"
                    + latestSeen + ",\"state\":\"IDLE\",\"ready\":true,\"admission\":\"open\",\"active_requests\":0,"
                    + "\"inflight_exact_versions\":{},\"committing\":" + committing + "}";
        }
        send(ex, 200, body.getBytes(StandardCharsets.UTF_8));
    }

    private void generate(HttpExchange ex) throws IOException {
        JsonNode req = JSON.readTree(ex.getRequestBody().readAllBytes());
        VersionConstraint.ParseResult parsed = VersionConstraint.parse(req.get("weight_version"));
        VersionConstraint c = parsed instanceof VersionConstraint.Valid v ? v.constraint() : VersionConstraint.NONE;
        long now;
        long latest;
        synchronized (this) {
            now = served;
            latest = latestSeen;
        }
        VersionConstraint.Verdict verdict = c.evaluate(now);
        if (verdict != VersionConstraint.Verdict.SATISFIED) {
            send(ex, 409, ProxyErrors.versionConflict(verdict, now, c.target(), latest));
            return;
        }
        ex.getResponseHeaders().set("x-stitch-weight-version-start", Long.toString(now));
        send(ex, 200, ("{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"" + now + "\"}}").getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        server.stop(0);
    }
}
