package dev.stitch.router;

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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;

/**
 * A stand-in sidecar for router tests: the {@code GET /stitch/state} long poll of docs/protocol/router.md §3 and a
 * {@code /generate} that admits by constraint against the version it really serves, answers the sidecar's 409
 * otherwise, and stamps {@code x-stitch-weight-version-start}. The reported state can be made to lie (a stale
 * view) or to fail (a drained replica); a streamed answer can be held between its two events.
 */
final class FakeReplica implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpServer server;
    private long seq;
    private long served;
    private long reported;
    private long latestSeen;
    private int activeRequests;
    private boolean committing;
    private boolean stateFails;
    private String inflightJson = "{}";
    volatile CountDownLatch streamHold = new CountDownLatch(0);

    FakeReplica(long served) throws IOException {
        this.served = served;
        this.reported = served;
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

    /** Serves and reports {@code version}. */
    synchronized void serve(long version) {
        served = version;
        reported = version;
        latestSeen = Math.max(latestSeen, version);
        changed();
    }

    /** Serves {@code version} while still reporting the old one: the router's view is stale. */
    synchronized void serveSilently(long version) {
        served = version;
    }

    synchronized void report(long latestSeenVersion, int load, boolean isCommitting, String inflightExact) {
        latestSeen = latestSeenVersion;
        activeRequests = load;
        committing = isCommitting;
        inflightJson = inflightExact;
        changed();
    }

    synchronized void failState(boolean fail) {
        stateFails = fail;
        changed();
    }

    private void changed() {
        seq++;
        notifyAll();
    }

    private void state(HttpExchange ex) throws IOException {
        String q = ex.getRequestURI().getQuery();
        long after = Long.parseLong(RouterRoutes.queryParameter("/?" + q, "after"));
        long timeoutMs = Long.parseLong(RouterRoutes.queryParameter("/?" + q, "timeout_ms"));
        String body;
        synchronized (this) {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (seq <= after && !stateFails) {
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
            if (stateFails) {
                body = null;
            } else {
                body = "{\"seq\":" + seq + ",\"run_id\":\"run\",\"served_version\":" + reported
                        + ",\"latest_seen_version\":" + latestSeen + ",\"state\":\"IDLE\",\"ready\":true,\"admission\":\"open\""
                        + ",\"active_requests\":" + activeRequests + ",\"inflight_exact_versions\":" + inflightJson
                        + ",\"committing\":" + committing + "}";
            }
        }
        if (body == null) {
            send(ex, 500, "application/json", "{}".getBytes(StandardCharsets.UTF_8));
        } else {
            send(ex, 200, "application/json", body.getBytes(StandardCharsets.UTF_8));
        }
    }

    private void generate(HttpExchange ex) throws IOException {
        JsonNode req = JSON.readTree(ex.getRequestBody().readAllBytes());
        VersionConstraint c = ((VersionConstraint.Valid) VersionConstraint.parse(req.get("weight_version"))).constraint();
        long now;
        long latest;
        synchronized (this) {
            now = served;
            latest = latestSeen;
        }
        VersionConstraint.Verdict v = c.evaluate(now);
        if (v != VersionConstraint.Verdict.SATISFIED) {
            ex.getResponseHeaders().set("Retry-After", ProxyErrors.RETRY_AFTER_SECONDS);
            send(ex, 409, "application/json", ProxyErrors.versionConflict(v, now, c.target(), latest));
            return;
        }
        ex.getResponseHeaders().set("x-stitch-weight-version-start", Long.toString(now));
        if (req.path("stream").asBoolean(false)) {
            ex.getResponseHeaders().set("Content-Type", "text/event-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write("data: {\"text\":\"first\"}\n\n".getBytes(StandardCharsets.UTF_8));
                out.flush();
                streamHold.await();
                out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return;
        }
        send(ex, 200, "application/json", ("{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"" + now + "\"}}")
                .getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            stateFails = true;
            notifyAll();
        }
        server.stop(0);
    }
}
