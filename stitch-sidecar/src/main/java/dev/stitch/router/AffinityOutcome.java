package dev.stitch.router;

/** What became of a request's session affinity (docs/protocol/router.md §2.3); counted in {@code /metrics}. */
public enum AffinityOutcome {
    /** The request had no session key, or its session had no replica yet. */
    NONE,
    /** The session's last replica still satisfied the constraint and got the request. */
    KEPT,
    /** The session's last replica could not serve the request, so another one was chosen. */
    BROKEN
}
