package dev.stitch.publish;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells rollout hosts that a version was published, so that they read the board now instead of at their next
 * poll (docs/protocol/board.md §7.7). Each URL gets one {@code POST} with {@code {"target_version": N}}, all in
 * parallel, with {@code Authorization: Bearer <token>} and a short timeout. A URL without a path names a sidecar
 * and is sent to its {@value #SYNC_ROUTE}; any other URL (a fan-out service, or a route spelled out) is posted
 * to as given. Best effort: a failure is logged and counted, never thrown, and sidecars take the call as a hint
 * and still read the board themselves.
 */
public final class WakeNotifier implements AutoCloseable {

    /** The sidecar route a bare sidecar URL is sent to; it takes a target hint (docs/protocol/sidecar-http.md §5). */
    public static final String SYNC_ROUTE = "/rpc_sync_from_bulletin_board";
    /** How long one notification may take by default: a hint that comes later than a poll is worthless. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    private static final Logger LOG = LoggerFactory.getLogger(WakeNotifier.class);

    private final List<URI> targets;
    private final String token;
    private final Duration timeout;
    private final HttpClient client;

    /**
     * @param urls    sidecars ({@code http://host:port}) or fan-out endpoints, each {@code http} or {@code https}
     * @param token   sent as a bearer token, or null for sidecars without a control token
     * @param timeout per notification, connection included
     */
    public WakeNotifier(List<URI> urls, String token, Duration timeout) {
        if (urls.isEmpty()) {
            throw new IllegalArgumentException("no URL to notify");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the notification timeout must be positive, not " + timeout);
        }
        List<URI> t = new ArrayList<>();
        for (URI u : urls) {
            t.add(target(Objects.requireNonNull(u, "url")));
        }
        this.targets = List.copyOf(t);
        this.token = token == null || token.isBlank() ? null : token.strip();
        this.timeout = timeout;
        this.client = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    /** Where a notification for {@code url} is posted: a bare sidecar URL gets its sync route. */
    static URI target(URI url) {
        String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(java.util.Locale.ROOT);
        if ((!scheme.equals("http") && !scheme.equals("https")) || url.getHost() == null) {
            throw new IllegalArgumentException("cannot notify " + url + ": an http(s)://host[:port][/path] URL is needed");
        }
        String path = url.getRawPath();
        if (path == null || path.isEmpty() || path.equals("/")) {
            return url.resolve(SYNC_ROUTE);
        }
        return url;
    }

    /** The URLs notifications go to, in the order given. */
    public List<URI> targets() {
        return targets;
    }

    /**
     * Starts notifying every target that {@code version} is published; the future completes once each answered,
     * failed or timed out, and never completes exceptionally.
     */
    public CompletableFuture<PublishResult.Notifications> published(long version) {
        byte[] body = ("{\"target_version\": " + version + "}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        List<CompletableFuture<String>> calls = new ArrayList<>();
        for (URI target : targets) {
            HttpRequest.Builder req = HttpRequest.newBuilder(target).timeout(timeout)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body));
            if (token != null) {
                req.header("Authorization", "Bearer " + token);
            }
            calls.add(client.sendAsync(req.build(), HttpResponse.BodyHandlers.discarding())
                    .handle((r, e) -> problem(target, r, e)));
        }
        return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).thenApply(done -> {
            List<String> failures = new ArrayList<>();
            for (CompletableFuture<String> c : calls) {
                String p = c.join();
                if (p != null) {
                    failures.add(p);
                }
            }
            if (!failures.isEmpty()) {
                LOG.warn("version {} published, but {} of {} wake notifications failed: {}", version, failures.size(),
                        targets.size(), String.join("; ", failures));
            }
            return new PublishResult.Notifications(targets.size() - failures.size(), failures.size(), failures);
        });
    }

    /** Null for a 2xx answer, else one line naming the target and what went wrong. */
    private static String problem(URI target, HttpResponse<Void> r, Throwable e) {
        if (e == null) {
            int status = r.statusCode();
            return status / 100 == 2 ? null : target + ": HTTP " + status + (status == 401 ? " (wrong or missing token)" : "");
        }
        Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        if (cause instanceof HttpTimeoutException) {
            return target + ": no answer in time";
        }
        return target + ": " + (cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage());
    }

    @Override
    public void close() {
        client.shutdownNow();
    }
}
