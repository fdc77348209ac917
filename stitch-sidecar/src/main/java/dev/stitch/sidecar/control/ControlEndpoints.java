package dev.stitch.sidecar.control;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.sidecar.proxy.ProxyStats;
import dev.stitch.sidecar.proxy.SidecarEndpoints;
import dev.stitch.sync.AwaitedVersion;
import dev.stitch.sync.SyncMetrics;
import dev.stitch.sync.SyncState;
import dev.stitch.sync.SyncStatus;
import dev.stitch.sync.SyncWorker;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * The sidecar-owned routes of docs/protocol/sidecar-http.md §5, answered from the sync worker's status snapshot:
 * nothing here waits for the board, the engine or the admission gate's commit.
 */
public final class ControlEndpoints implements SidecarEndpoints {

    static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    /** Control bodies are exactly one JSON document: {@code {"a":1}garbage} is refused, not half-read. */
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private final SyncWorker worker;
    private final String replicaRunId;
    private final String softwareVersion;
    private volatile Supplier<ProxyStats> proxyStats = () -> null;
    private final StateChangeNotifier<SyncStatus> stateStream;

    /**
     * @param replicaRunId the {@code run_id} replica label from the configuration, or null
     */
    public ControlEndpoints(SyncWorker worker, String replicaRunId, String softwareVersion) {
        this.worker = worker;
        this.replicaRunId = replicaRunId;
        this.softwareVersion = softwareVersion;
        this.stateStream = new StateChangeNotifier<>(worker::status, ReplicaStateBody::changeKey,
                ReplicaStateBody::loadKey, ReplicaStateBody.LOAD_INTERVAL_MS);
        worker.onChange(stateStream::poke);
    }

    /**
     * {@code GET /stitch/state}: the state stream for routers (sidecar-http.md §5.1). Answers without a thread
     * of its own while it waits: the notifier completes the future on a change or when the wait times out.
     */
    @Override
    public java.util.concurrent.CompletableFuture<EndpointResponse> stateStream(String query) {
        ReplicaStateBody.Query q;
        try {
            q = ReplicaStateBody.Query.parse(query);
        } catch (IllegalArgumentException e) {
            return java.util.concurrent.CompletableFuture.completedFuture(
                    EndpointResponse.json(400, ProxyErrors.invalidRequest(e.getMessage())));
        }
        long after = q.after().orElse(Long.MIN_VALUE);
        return stateStream.await(after, q.after().isPresent() ? q.timeoutMillis() : 0)
                .thenApply(n -> EndpointResponse.json(200, bytes(ReplicaStateBody.of(n.seq(), n.state(), JSON))));
    }

    /** Answers the parked state-stream waiters and stops the notifier's thread. */
    public void close() {
        stateStream.close();
    }

    /** Connects the data plane's counters (the proxy is built after its endpoints). */
    public void proxyStats(Supplier<ProxyStats> stats) {
        this.proxyStats = stats;
    }

    @Override
    public EndpointResponse health() {
        SyncStatus s = worker.status();
        ObjectNode n = JSON.createObjectNode();
        n.put("ok", s.ready());
        n.put("ready", s.ready());
        n.put("current_version", s.currentVersion());
        n.put("sync_state", s.state().name());
        n.put("reason", s.readyReason());
        return EndpointResponse.json(s.ready() ? 200 : 503, bytes(n));
    }

    @Override
    public EndpointResponse serverInfo() {
        return EndpointResponse.json(200, bytes(serverInfoNode()));
    }

    /** The {@code /server_info} object: every upstream v1 key with its upstream type, then ours. */
    ObjectNode serverInfoNode() {
        SyncStatus s = worker.status();
        ObjectNode n = JSON.createObjectNode();
        n.put("run_id", replicaRunId);
        n.put("backend", worker.engineName());
        n.put("commit_mode", worker.commitMode().label());
        n.put("current_run_id", s.currentRunId());
        n.put("current_version", s.currentVersion());
        n.put("latest_seen_version", s.latestSeenVersion());
        if (s.queuedTargetVersion() == null) {
            n.putNull("queued_target_version");
        } else {
            n.put("queued_target_version", s.queuedTargetVersion().longValue());
        }
        n.put("sync_state", s.state().name());
        n.put("last_sync_error", s.lastSyncError());
        n.put("sync_task_active", s.syncTaskActive());
        n.put("active_requests", s.activeRequests());
        ObjectNode exact = n.putObject("inflight_exact_versions");
        s.inflightExactVersions().forEach((v, c) -> exact.put(Long.toString(v), c));
        n.set("metrics", JSON.valueToTree(s.lastMetrics()));
        n.put("protocol_version", 1);
        n.put("ready", s.ready());
        n.put("ready_reason", s.readyReason());
        n.put("layout", worker.layout());
        n.put("engine_mode", worker.engineMode());
        n.put("engine_state", s.engineConsistent() ? "consistent" : "unknown");
        n.put("latest_run_id", s.latestRunId());
        n.put("behind_by", s.behindBy());
        n.put("wanted_version", s.wantedVersion());
        n.put("admission", s.admission());
        n.put("consecutive_errors", s.consecutiveErrors());
        if (s.nextRetryAt() == null) {
            n.putNull("next_retry_at");
        } else {
            n.put("next_retry_at", s.nextRetryAt().doubleValue());
        }
        if (s.lastCommitAt() == null) {
            n.putNull("last_commit_at");
        } else {
            n.put("last_commit_at", s.lastCommitAt().doubleValue());
        }
        n.put("engine_reachable", s.engineReachable());
        n.put("software_version", softwareVersion);
        AwaitedVersion a = s.awaiting();
        if (a == null) {
            n.putNull("waiting_for_arrival");
        } else {
            ObjectNode w = n.putObject("waiting_for_arrival");
            w.put("version", a.version());
            w.put("pointer_version", a.pointerVersion());
            w.put("missing", a.missingFile());
            w.put("since", a.since());
            w.put("waited_s", a.waitedSeconds());
            w.put("retries", a.retries());
            w.put("timeout_s", a.timeoutSeconds());
        }
        return n;
    }

    @Override
    public EndpointResponse weightVersion() {
        ObjectNode n = JSON.createObjectNode();
        n.put("weight_version", Long.toString(worker.status().currentVersion()));
        return EndpointResponse.json(200, bytes(n));
    }

    @Override
    public EndpointResponse rpcSync(byte[] body) {
        OptionalLong hint;
        try {
            hint = parseTargetVersion(body);
        } catch (IllegalArgumentException e) {
            return EndpointResponse.json(400, ProxyErrors.invalidRequest(e.getMessage()));
        }
        worker.wake(hint, true);
        SyncStatus s = worker.status();
        ObjectNode n = JSON.createObjectNode();
        n.put("accepted", true);
        n.put("current_version", s.currentVersion());
        if (s.queuedTargetVersion() == null) {
            n.putNull("queued_target_version");
        } else {
            n.put("queued_target_version", s.queuedTargetVersion().longValue());
        }
        n.put("sync_state", s.state().name());
        return EndpointResponse.json(200, bytes(n));
    }

    /** {@code {"target_version": <int, digit string or null>}}; an empty body is a null hint. */
    static OptionalLong parseTargetVersion(byte[] body) {
        if (body == null || new String(body, StandardCharsets.UTF_8).isBlank()) {
            return OptionalLong.empty();
        }
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("request body is not valid JSON");
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("request body must be a JSON object");
        }
        JsonNode t = root.get("target_version");
        if (t == null || t.isNull()) {
            return OptionalLong.empty();
        }
        if (t.isIntegralNumber() && t.canConvertToLong() && t.asLong() >= 0) {
            return OptionalLong.of(t.asLong());
        }
        if (t.isTextual()) {
            String text = t.asText().strip();
            if (!text.isEmpty() && text.chars().allMatch(c -> c >= '0' && c <= '9')) {
                try {
                    return OptionalLong.of(Long.parseLong(text));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("target_version is out of range: " + t);
                }
            }
        }
        throw new IllegalArgumentException("target_version must be a non-negative integer, a digit string or null, not "
                + t);
    }

    @Override
    public EndpointResponse wake() {
        worker.wake(OptionalLong.empty(), true);
        return serverInfo();
    }

    @Override
    public EndpointResponse metrics() {
        SyncStatus s = worker.status();
        StringBuilder out = new StringBuilder(8192);
        gauge(out, "stitch_current_version", "Version the engine is serving.", s.currentVersion());
        gauge(out, "stitch_latest_seen_version", "Newest version seen on the board.", s.latestSeenVersion());
        gauge(out, "stitch_behind_versions", "Versions between the served one and the newest seen.", s.behindBy());
        gauge(out, "stitch_ready", "1 when /health answers 200.", s.ready() ? 1 : 0);
        out.append("# HELP stitch_sync_state Sync worker state (one-hot).\n# TYPE stitch_sync_state gauge\n");
        for (SyncState st : SyncState.values()) {
            out.append("stitch_sync_state{state=\"").append(st.name()).append("\"} ")
                    .append(st == s.state() ? 1 : 0).append('\n');
        }
        gauge(out, "stitch_active_requests", "Admitted versioned requests in flight.", s.activeRequests());
        gauge(out, "stitch_inflight_exact_requests", "Admitted exact-pinned requests in flight.",
                s.inflightExactRequests());
        gauge(out, "stitch_engine_state_unknown", "1 while the engine's weights are in an unknown state.",
                s.engineConsistent() ? 0 : 1);
        gauge(out, "stitch_consecutive_sync_errors", "Failed passes since the last success.", s.consecutiveErrors());
        out.append("# HELP stitch_sync_arrival_wait_seconds How long the sidecar has waited for files of a version "
                + "the pointer names (0 when it waits for none).\n# TYPE stitch_sync_arrival_wait_seconds gauge\n")
                .append("stitch_sync_arrival_wait_seconds ")
                .append(SyncMetrics.number(s.awaiting() == null ? 0 : s.awaiting().waitedSeconds())).append('\n');
        worker.metrics().appendPrometheus(out);
        worker.commitPermission().appendPrometheus(out);
        worker.fetchStats().ifPresent(f -> SyncMetrics.appendFetch(f, out));
        ProxyStats stats = proxyStats.get();
        if (stats != null) {
            stats.appendPrometheus(out);
        }
        return new EndpointResponse(200, PROMETHEUS_TYPE, out.toString().getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void notReady(long targetVersion) {
        worker.notReady(targetVersion);
    }

    @Override
    public void engineSuspect(String detail) {
        worker.engineSuspect(detail);
    }

    private static void gauge(StringBuilder out, String name, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" gauge\n");
        out.append(name).append(' ').append(value).append('\n');
    }

    private static byte[] bytes(JsonNode n) {
        try {
            return JSON.writeValueAsBytes(n);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialize a JSON tree", e);
        }
    }

}
