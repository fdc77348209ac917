package dev.stitch.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.CanonicalJson;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.sidecar.proxy.RequestConstraint;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The router's own routes (docs/protocol/router.md §4, §5): membership in the shape of SGLang's router,
 * {@code /fleet}, {@code /metrics} and commit permission. Everything else is forwarded by a {@link RouterExchange}.
 * Each answer is computed on the event loop: it reads or changes only in-memory state.
 */
final class RouterRoutes {
    /** The header a client names its session by; affinity keeps a session's requests on one replica. */
    static final String SESSION_HEADER = "x-stitch-session";
    /** The header the router adds to forwarded responses: the replica that served it. */
    static final String REPLICA_HEADER = "x-stitch-router-replica";
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String JSON_TYPE = "application/json";

    /** A complete answer of the router itself. */
    record Answer(int status, String contentType, byte[] body, Map<String, String> headers) {
        static Answer json(int status, byte[] body) {
            return new Answer(status, JSON_TYPE, body, Map.of());
        }
    }

    private final Fleet fleet;
    private final ReplicaUpstreams upstreams;
    private final RollingUpdatePolicy rolling;
    private final RouterMetrics metrics;

    RouterRoutes(Fleet fleet, ReplicaUpstreams upstreams, RollingUpdatePolicy rolling, RouterMetrics metrics) {
        this.fleet = fleet;
        this.upstreams = upstreams;
        this.rolling = rolling;
        this.metrics = metrics;
    }

    /** The answer to a request for one of the router's own routes, or null when the request is to be forwarded. */
    Answer answer(String method, String target, byte[] body) {
        String route = RequestConstraint.routeOf(target);
        return switch (method + " " + route) {
            case "GET fleet" -> Answer.json(200, fleetJson());
            case "GET metrics" -> new Answer(200, "text/plain; version=0.0.4; charset=utf-8",
                    metrics.exposition().getBytes(StandardCharsets.UTF_8), Map.of());
            case "GET list_workers" -> Answer.json(200, listWorkers());
            case "POST add_worker" -> membership(target, true);
            case "POST remove_worker" -> membership(target, false);
            case "POST stitch/commit_permission" -> commitPermission(body);
            default -> null;
        };
    }

    /** Every member's view with the router's own in-flight count as its load when that is the higher. */
    List<ReplicaView> loadedSnapshot() {
        List<ReplicaView> views = fleet.snapshot();
        List<ReplicaView> out = new ArrayList<>(views.size());
        for (ReplicaView v : views) {
            int own = upstreams.inflight(v.url());
            out.add(own > v.activeRequests() ? v.withActiveRequests(own) : v);
        }
        return out;
    }

    private Answer membership(String target, boolean add) {
        String url = queryParameter(target, "url");
        if (url == null) {
            return Answer.json(400, ProxyErrors.invalidRequest("the query parameter 'url' is required"));
        }
        boolean changed;
        try {
            changed = add ? fleet.add(url) : fleet.remove(url);
        } catch (IllegalArgumentException e) {
            return Answer.json(400, ProxyErrors.invalidRequest(e.getMessage()));
        }
        StringBuilder sb = new StringBuilder("{\"url\":");
        CanonicalJson.appendString(sb, Fleet.normalise(url));
        sb.append(",\"changed\":").append(changed).append('}');
        return Answer.json(200, sb.toString().getBytes(StandardCharsets.UTF_8));
    }

    private Answer commitPermission(byte[] body) {
        String replica;
        long from;
        long to;
        try {
            JsonNode n = JSON.readTree(body);
            if (n == null || !n.path("replica").isTextual() || !n.path("from").canConvertToLong()
                    || !n.path("to").canConvertToLong()) {
                throw new IOException("expected {\"replica\": <url>, \"from\": <int>, \"to\": <int>}");
            }
            String named = n.path("replica").textValue();
            // a sidecar may name itself host:port; members are URLs
            replica = Fleet.normalise(named.contains("://") ? named : "http://" + named);
            from = n.path("from").asLong();
            to = n.path("to").asLong();
        } catch (IOException | IllegalArgumentException e) {
            return Answer.json(400, ProxyErrors.invalidRequest(e.getMessage()));
        }
        CommitPermission p = rolling.decide(fleet.snapshot(), replica, from, to, System.currentTimeMillis());
        return Answer.json(200, p.json().getBytes(StandardCharsets.UTF_8));
    }

    private byte[] fleetJson() {
        List<ReplicaView> views = loadedSnapshot();
        long newest = -1;
        for (ReplicaView r : views) {
            newest = Math.max(newest, r.latestSeenVersion());
        }
        StringBuilder sb = new StringBuilder("{\"replicas\":[");
        for (int i = 0; i < views.size(); i++) {
            ReplicaView r = views.get(i);
            String state = !r.reachable() ? "unreachable" : r.committing() ? "committing"
                    : r.routable() ? "serving" : "not_admitting";
            if (i > 0) {
                sb.append(',');
            }
            sb.append("{\"url\":");
            CanonicalJson.appendString(sb, r.url());
            sb.append(",\"version\":").append(r.servedVersion())
                    .append(",\"lag\":").append(r.servedVersion() < 0 ? -1 : Math.max(0, newest - r.servedVersion()))
                    .append(",\"state\":\"").append(state).append('"')
                    .append(",\"load\":").append(r.activeRequests()).append('}');
        }
        sb.append("],\"outstanding_commit_grants\":").append(rolling.outstandingGrants()).append('}');
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** SGLang router's shape: {@code {"urls": [...]}}. */
    private byte[] listWorkers() {
        StringBuilder sb = new StringBuilder("{\"urls\":[");
        List<String> urls = fleet.urls();
        for (int i = 0; i < urls.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            CanonicalJson.appendString(sb, urls.get(i));
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    static String queryParameter(String target, String name) {
        int q = target.indexOf('?');
        if (q < 0) {
            return null;
        }
        for (String pair : target.substring(q + 1).split("&")) {
            int eq = pair.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (k.equals(name)) {
                return eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }
}
