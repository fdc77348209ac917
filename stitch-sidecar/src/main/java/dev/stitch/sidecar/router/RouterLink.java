package dev.stitch.sidecar.router;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * The router this replica asks before each commit (docs/protocol/sidecar-http.md §5.2).
 *
 * @param url       the router's base URL ({@code --router}, {@code STITCH_ROUTER_URL})
 * @param token     the bearer token sent to it, or null ({@code --router-token-file})
 * @param replicaId this replica's id in the question ({@code --replica-id}, default {@code host:port})
 * @param timeout   how long one question may take before the replica commits without an answer
 */
public record RouterLink(URI url, String token, String replicaId, Duration timeout) {

    /** Two seconds: a router slower than that is treated as down, and the replica commits as it would alone. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    public RouterLink {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(replicaId, "replicaId");
        Objects.requireNonNull(timeout, "timeout");
    }

    public RouterCommitPermission permission() {
        return new RouterCommitPermission(url, token, replicaId, timeout);
    }
}
