package dev.stitch.router;

/** The answer to a sidecar's {@code POST /stitch/commit_permission} (docs/protocol/router.md §4). */
public sealed interface CommitPermission permits CommitPermission.Granted, CommitPermission.Denied {

    /** {@code {"granted": true}}. */
    record Granted() implements CommitPermission {
    }

    /**
     * {@code {"granted": false, "retry_after_ms": n}}.
     *
     * @param retryAfterMs how long the sidecar waits before asking again
     * @param reason       why, for the router's log and tests ({@code max_committing} or {@code hold_previous})
     */
    record Denied(long retryAfterMs, String reason) implements CommitPermission {
    }

    /** The JSON body. */
    default String json() {
        return switch (this) {
            case Granted g -> "{\"granted\":true}";
            case Denied d -> "{\"granted\":false,\"retry_after_ms\":" + d.retryAfterMs() + "}";
        };
    }
}
