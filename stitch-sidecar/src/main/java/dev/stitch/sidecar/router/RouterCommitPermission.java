package dev.stitch.sidecar.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.sync.CommitPermission;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks a version-aware router whether this replica may commit now: {@code POST <router>/stitch/commit_permission}
 * (docs/protocol/sidecar-http.md §5.2). A grant commits; a denial defers the commit by the router's
 * {@code retry_after_ms}; a router that cannot be reached, times out or answers anything else does not
 * hold the fleet back: the replica commits as it would without a router, and says so once per episode.
 */
public final class RouterCommitPermission implements CommitPermission {

    private static final Logger LOG = LoggerFactory.getLogger(RouterCommitPermission.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A denial without {@code retry_after_ms} (or with a silly one) is retried after this long. */
    static final long DEFAULT_RETRY_MS = 1000;
    static final long MAX_RETRY_MS = 60_000;
    /** A zero delay would turn the worker into a busy loop against the router. */
    static final long MIN_RETRY_MS = 50;

    private final URI endpoint;
    private final String token;
    private final String replica;
    private final Duration timeout;
    private final HttpClient client;
    private final AtomicLong denials = new AtomicLong();
    private final AtomicLong unreachable = new AtomicLong();
    private volatile boolean inUnreachableEpisode;

    /**
     * @param router  the router's base URL ({@code --router})
     * @param token   the bearer token sent to it, or null ({@code --router-token-file})
     * @param replica this replica's id ({@code --replica-id})
     * @param timeout how long one question may take before the replica commits anyway
     */
    public RouterCommitPermission(URI router, String token, String replica, Duration timeout) {
        String base = router.toString();
        this.endpoint = URI.create((base.endsWith("/") ? base.substring(0, base.length() - 1) : base)
                + "/stitch/commit_permission");
        this.token = token;
        this.replica = replica;
        this.timeout = timeout;
        this.client = HttpClient.newBuilder().connectTimeout(timeout).version(HttpClient.Version.HTTP_1_1).build();
    }

    @Override
    public Decision ask(long from, long to) {
        ObjectNode body = JSON.createObjectNode();
        body.put("replica", replica);
        body.put("from", from);
        body.put("to", to);
        HttpRequest.Builder req = HttpRequest.newBuilder(endpoint).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        if (token != null) {
            req.header("Authorization", "Bearer " + token);
        }
        String problem;
        try {
            HttpResponse<byte[]> resp = client.send(req.build(), HttpResponse.BodyHandlers.ofByteArray());
            if (resp.statusCode() == 200) {
                JsonNode answer = JSON.readTree(resp.body());
                JsonNode granted = answer == null ? null : answer.get("granted");
                if (granted != null && granted.isBoolean()) {
                    recovered();
                    if (granted.booleanValue()) {
                        return GRANTED;
                    }
                    denials.incrementAndGet();
                    return new Decision.Deferred(retryAfter(answer.get("retry_after_ms")));
                }
                problem = "answer without a boolean 'granted'";
            } else {
                problem = "HTTP " + resp.statusCode();
            }
        } catch (IOException e) {
            problem = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            problem = "interrupted";
        }
        unreachable.incrementAndGet();
        if (!inUnreachableEpisode) {
            inUnreachableEpisode = true;
            LOG.warn("router {} did not answer the commit permission for {} -> {} ({}); committing without it "
                    + "until it answers again", endpoint, from, to, problem);
        }
        return GRANTED;
    }

    private void recovered() {
        if (inUnreachableEpisode) {
            inUnreachableEpisode = false;
            LOG.info("router {} answers commit permissions again", endpoint);
        }
    }

    private static long retryAfter(JsonNode n) {
        if (n == null || !n.canConvertToLong() || n.asLong() < 0) {
            return DEFAULT_RETRY_MS;
        }
        return Math.max(MIN_RETRY_MS, Math.min(n.asLong(), MAX_RETRY_MS));
    }

    @Override
    public void appendPrometheus(StringBuilder out) {
        out.append("# HELP stitch_router_denials_total Commits the router deferred.\n")
                .append("# TYPE stitch_router_denials_total counter\n")
                .append("stitch_router_denials_total ").append(denials.get()).append('\n');
        out.append("# HELP stitch_router_unreachable_total Commit permissions the router did not answer "
                        + "(the replica committed anyway).\n")
                .append("# TYPE stitch_router_unreachable_total counter\n")
                .append("stitch_router_unreachable_total ").append(unreachable.get()).append('\n');
    }

    @Override
    public void close() {
        client.close();
    }
}
