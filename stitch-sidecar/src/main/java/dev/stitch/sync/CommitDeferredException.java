package dev.stitch.sync;

/**
 * The router deferred the commit of a staged version (docs/protocol/sidecar-http.md §5.2): the pass ends without
 * touching the gate, the replica keeps serving {@link #from}, and the worker asks again after
 * {@link #retryAfterMillis}. Not a sync error: readiness and the error counters are left alone.
 */
final class CommitDeferredException extends Exception {

    private static final long serialVersionUID = 1L;

    private final long retryAfterMillis;

    CommitDeferredException(long from, long to, long retryAfterMillis) {
        super("the router deferred the commit " + from + " -> " + to + " for " + retryAfterMillis + " ms");
        this.retryAfterMillis = retryAfterMillis;
    }

    long retryAfterMillis() {
        return retryAfterMillis;
    }
}
