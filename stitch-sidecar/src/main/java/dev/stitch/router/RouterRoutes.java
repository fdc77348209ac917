package dev.stitch.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.CanonicalJson;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.sidecar.proxy.RequestConstraint;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What the router does with each request (docs/protocol/router.md §2, §5): its own routes, or a forward to the
 * replica the routing policy chose, with at most one re-route when the chosen sidecar refuses with a retryable
 * 409/503 or cannot be reached (its view was stale).
 */
final class RouterRoutes {
    /** The header a client names its session by; affinity keeps a session's requests on one replica. */
    static final String SESSION_HEADER = "x-stitch-session";
    /** The header the router adds to forwarded responses: the replica that served it. */
    static final String REPLICA_HEADER = "x-stitch-router-replica";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String JSON_TYPE = "application/json";
    /** Headers java.net.http sets itself or refuses, and the hop-by-hop ones (RFC 9110 §7.6.1). */
    private static final Set<String> NOT_FORWARDED = Set.of("connection", "content-length", "expect", "host", "upgrade",
            "keep-alive", "transfer-encoding", "te", "trailer", "proxy-connection", "proxy-authorization", "http2-settings");

    private final Fleet fleet;
    private final RollingUpdatePolicy rolling;
    private final RouterMetrics metrics;
    private final SessionTable sessions;
    private final RequestConstraint requests;
    private final HttpClient http;
    private final Duration upstreamTimeout;

    RouterRoutes(Fleet fleet, RollingUpdatePolicy rolling, RouterMetrics metrics, SessionTable sessions,
                 RequestConstraint requests, HttpClient http, Duration upstreamTimeout) {
        this.fleet = fleet;
        this.rolling = rolling;
        this.metrics = metrics;
        this.sessions = sessions;
        this.requests = requests;
        this.http = http;
        this.upstreamTimeout = upstreamTimeout;
    }

    void handle(RouterHandler.Request req, RouterHandler.Reply reply) {
        String route = RequestConstraint.routeOf(req.target());
        switch (req.method() + " " + route) {
            case "GET fleet" -> reply.full(200, JSON_TYPE, fleetJson(), Map.of());
            case "GET metrics" -> reply.full(200, "text/plain; version=0.0.4; charset=utf-8",
                    metrics.exposition().getBytes(StandardCharsets.UTF_8), Map.of());
            case "GET list_workers" -> reply.full(200, JSON_TYPE, listWorkers(), Map.of());
            case "POST add_worker" -> membership(req, reply, true);
            case "POST remove_worker" -> membership(req, reply, false);
            case "POST stitch/commit_permission" -> commitPermission(req, reply);
            default -> forward(req, reply);
        }
    }

    private void forward(RouterHandler.Request req, RouterHandler.Reply reply) {
        RequestConstraint.Reading reading = requests.read(req.target(), req.headers().get("content-type"), req.body());
        if (reading instanceof RequestConstraint.Refuse refuse) {
            metrics.rejected(refuse.status(), refuse.type());
            reply.full(refuse.status(), JSON_TYPE, refuse.body(), Map.of());
            return;
        }
        RequestConstraint.Route routeBy = (RequestConstraint.Route) reading;
        if (routeBy.constraint() != null && routeBy.constraint().isExact()) {
            rolling.pinnedRouted(routeBy.constraint().target(), System.currentTimeMillis());
        }
        String session = req.headers().get(SESSION_HEADER);
        Set<String> excluded = new HashSet<>();
        for (int attempt = 0; ; attempt++) {
            List<ReplicaView> candidates = new ArrayList<>();
            for (ReplicaView r : fleet.snapshot()) {
                if (!excluded.contains(r.url())) {
                    candidates.add(r);
                }
            }
            RoutingDecision decision = RoutingPolicy.choose(candidates, routeBy.constraint(), sessions.lastReplica(session));
            if (decision instanceof RoutingDecision.Reject reject) {
                metrics.rejected(reject.status(), reject.reason());
                reply.full(reject.status(), JSON_TYPE, reject.body(),
                        reject.retryAfter() ? Map.of("Retry-After", ProxyErrors.RETRY_AFTER_SECONDS) : Map.of());
                return;
            }
            RoutingDecision.Forward to = (RoutingDecision.Forward) decision;
            HttpResponse<InputStream> rsp;
            try {
                rsp = http.send(upstream(req, to.replica()), HttpResponse.BodyHandlers.ofInputStream());
            } catch (IOException e) {
                // The view said routable but the sidecar is not answering: drain it now rather than wait for its
                // state poll to fail, and try once elsewhere.
                ReplicaView v = fleet.view(to.replica());
                if (v != null) {
                    fleet.update(v.unreachable());
                }
                if (attempt == 0) {
                    metrics.rerouted();
                    excluded.add(to.replica());
                    continue;
                }
                metrics.rejected(503, "EngineUnavailable");
                reply.full(503, JSON_TYPE, ProxyErrors.engineUnavailable(), Map.of("Retry-After", ProxyErrors.RETRY_AFTER_SECONDS));
                return;
            } catch (InterruptedException e) {
                reply.abort();
                return;
            }
            int status = rsp.statusCode();
            if (attempt == 0 && routeBy.versioned() && (status == 409 || status == 503)) {
                // The sidecar moved since its last state answer (router.md §2.5): one more choice without it.
                discard(rsp.body());
                metrics.rerouted();
                excluded.add(to.replica());
                continue;
            }
            metrics.routed(to.affinity());
            sessions.routed(session, to.replica());
            relay(rsp, to.replica(), reply);
            return;
        }
    }

    private HttpRequest upstream(RouterHandler.Request req, String replica) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(replica + req.target())).timeout(upstreamTimeout)
                .method(req.method(), req.body().length == 0 && (req.method().equals("GET") || req.method().equals("HEAD"))
                        ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(req.body()));
        for (Map.Entry<String, String> h : req.headers()) {
            if (!NOT_FORWARDED.contains(h.getKey().toLowerCase(Locale.ROOT))) {
                b.header(h.getKey(), h.getValue());
            }
        }
        return b.build();
    }

    /** Status and headers at once, then the body chunk by chunk as the sidecar sends it (streams included). */
    private static void relay(HttpResponse<InputStream> rsp, String replica, RouterHandler.Reply reply) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        rsp.headers().map().forEach((k, v) -> {
            if (!NOT_FORWARDED.contains(k.toLowerCase(Locale.ROOT)) && !k.startsWith(":")) {
                headers.put(k, v);
            }
        });
        headers.put(REPLICA_HEADER, List.of(replica));
        reply.head(rsp.statusCode(), headers);
        byte[] buf = new byte[16 * 1024];
        try (InputStream in = rsp.body()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (n > 0 && !reply.chunk(buf, n)) {
                    return;
                }
            }
            reply.end();
        } catch (IOException e) {
            reply.abort();
        }
    }

    private static void discard(InputStream body) {
        try (body) {
            body.transferTo(java.io.OutputStream.nullOutputStream());
        } catch (IOException ignored) {
            // the refusal's body is not used
        }
    }

    private void membership(RouterHandler.Request req, RouterHandler.Reply reply, boolean add) {
        String url = queryParameter(req.target(), "url");
        if (url == null) {
            reply.full(400, JSON_TYPE, ProxyErrors.invalidRequest("the query parameter 'url' is required"), Map.of());
            return;
        }
        boolean changed;
        try {
            changed = add ? fleet.add(url) : fleet.remove(url);
        } catch (IllegalArgumentException e) {
            reply.full(400, JSON_TYPE, ProxyErrors.invalidRequest(e.getMessage()), Map.of());
            return;
        }
        StringBuilder sb = new StringBuilder("{\"url\":");
        CanonicalJson.appendString(sb, Fleet.normalise(url));
        sb.append(",\"changed\":").append(changed).append('}');
        reply.full(200, JSON_TYPE, sb.toString().getBytes(StandardCharsets.UTF_8), Map.of());
    }

    private void commitPermission(RouterHandler.Request req, RouterHandler.Reply reply) {
        String replica;
        long from;
        long to;
        try {
            JsonNode n = JSON.readTree(req.body());
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
            reply.full(400, JSON_TYPE, ProxyErrors.invalidRequest(e.getMessage()), Map.of());
            return;
        }
        CommitPermission p = rolling.decide(fleet.snapshot(), replica, from, to, System.currentTimeMillis());
        reply.full(200, JSON_TYPE, p.json().getBytes(StandardCharsets.UTF_8), Map.of());
    }

    private byte[] fleetJson() {
        List<ReplicaView> views = fleet.snapshot();
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
