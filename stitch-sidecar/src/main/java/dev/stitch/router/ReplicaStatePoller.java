package dev.stitch.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows each member's {@code GET /stitch/state} long poll on its own virtual thread
 * (docs/protocol/router.md §3). A failed poll marks the replica unreachable, which drains it: the routing policy
 * skips it until a later poll answers, which re-admits it.
 */
public final class ReplicaStatePoller implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaStatePoller.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http;
    private final long longPollMs;
    private final long retryMs;
    private final Map<String, Thread> pollers = new ConcurrentHashMap<>();
    private volatile Fleet fleet;
    private volatile Runnable onChange = () -> { };
    private volatile java.util.function.Consumer<String> onUnreachable = url -> { };

    /**
     * @param longPollMs the {@code timeout_ms} each poll asks the sidecar to wait
     * @param retryMs    the pause after a failed poll before asking again
     */
    public ReplicaStatePoller(long longPollMs, long retryMs) {
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).version(HttpClient.Version.HTTP_1_1).build();
        this.longPollMs = longPollMs;
        this.retryMs = retryMs;
    }

    /** Wires the fleet whose members are polled, and a callback run after every state change. */
    public void attach(Fleet fleet, Runnable onChange) {
        this.fleet = fleet;
        this.onChange = onChange;
    }

    /** A callback run with a member's URL when its polls start failing (once per run of failures). */
    public void onUnreachable(java.util.function.Consumer<String> callback) {
        this.onUnreachable = callback;
    }

    /** Starts polling {@code url}; its thread stops once the url leaves the fleet. */
    public void start(String url) {
        // Registered before it starts: the loop runs only while its url is registered.
        Thread t = Thread.ofVirtual().name("stitch-router-poll-" + url).unstarted(() -> poll(url));
        if (pollers.putIfAbsent(url, t) == null) {
            t.start();
        }
    }

    /** Stops polling {@code url}. */
    public void stop(String url) {
        Thread t = pollers.remove(url);
        if (t != null) {
            t.interrupt();
        }
    }

    private void poll(String url) {
        long after = -1;
        String runId = null;
        boolean failing = false;
        while (!Thread.currentThread().isInterrupted() && pollers.containsKey(url)) {
            try {
                HttpRequest req = HttpRequest.newBuilder(URI.create(url + "/stitch/state?after=" + after
                                + "&timeout_ms=" + longPollMs))
                        .timeout(Duration.ofMillis(longPollMs + 5_000)).GET().build();
                HttpResponse<byte[]> rsp = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
                if (rsp.statusCode() != 200) {
                    throw new IOException("GET /stitch/state answered " + rsp.statusCode());
                }
                JsonNode s = JSON.readTree(rsp.body());
                String run = s.path("run_id").isTextual() ? s.path("run_id").textValue() : null;
                // A new run restarts the sidecar's sequence: ask for the next state, not one past the old run's.
                long seq = s.path("seq").asLong(-1);
                after = run != null && runId != null && !run.equals(runId) ? -1 : seq;
                runId = run;
                fleet.update(view(url, s));
                failing = false;
            } catch (InterruptedException e) {
                return;
            } catch (IOException | RuntimeException e) {
                ReplicaView old = fleet.view(url);
                boolean first = !failing;
                if (first) {
                    failing = true;
                    LOG.warn("replica {} drained: state poll failed: {}", url, e.toString());
                }
                if (old != null) {
                    fleet.update(old.unreachable());
                }
                if (first) {
                    onUnreachable.accept(url);
                }
                after = -1;
                onChange.run();
                try {
                    Thread.sleep(retryMs);
                } catch (InterruptedException ie) {
                    return;
                }
                continue;
            }
            onChange.run();
        }
    }

    /** The state object of docs/protocol/router.md §3 as a view; a missing field reads as its safe default. */
    static ReplicaView view(String url, JsonNode s) {
        Map<Long, Integer> pinned = new HashMap<>();
        JsonNode inflight = s.path("inflight_exact_versions");
        for (Iterator<Map.Entry<String, JsonNode>> it = inflight.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            try {
                pinned.put(Long.parseLong(e.getKey()), e.getValue().asInt());
            } catch (NumberFormatException ignored) {
                // a key that is no version cannot pin anything the router routes by
            }
        }
        return new ReplicaView(url, true, s.path("served_version").asLong(-1), s.path("latest_seen_version").asLong(-1),
                s.path("ready").asBoolean(false), admitting(s.path("admission")), s.path("active_requests").asInt(0),
                s.path("committing").asBoolean(false), pinned);
    }

    /** {@code admission} as a boolean, or a word: "open" (or "admitting") admits, anything else does not. */
    static boolean admitting(JsonNode admission) {
        if (admission.isBoolean()) {
            return admission.booleanValue();
        }
        if (admission.isTextual()) {
            String a = admission.textValue();
            return a.equalsIgnoreCase("open") || a.equalsIgnoreCase("admitting");
        }
        return admission.isMissingNode();
    }

    @Override
    public void close() {
        for (String url : pollers.keySet()) {
            stop(url);
        }
    }
}
