package dev.stitch.sync;

/**
 * Who decides when this replica may commit a newer version: a version-aware router rolling an update across
 * its replicas (docs/protocol/sidecar-http.md §5.2). Asked on the sync worker's thread after a plan is staged
 * and before the admission gate closes; an answer may take as long as the implementation's own timeout.
 */
public interface CommitPermission {

    /** What the worker does with a staged version. */
    sealed interface Decision {
        /** Commit now. */
        record Granted() implements Decision {
        }

        /** Keep serving the old version and ask again after {@code retryAfterMillis}. */
        record Deferred(long retryAfterMillis) implements Decision {
        }
    }

    Decision GRANTED = new Decision.Granted();

    /** The sidecar without {@code --router}: every commit goes ahead, as it always did. */
    CommitPermission ALWAYS = (from, to) -> GRANTED;

    /** Whether the replica may move from serving {@code from} to {@code to} now. */
    Decision ask(long from, long to);

    /** Prometheus lines of the implementation's counters; none by default. */
    default void appendPrometheus(StringBuilder out) {
    }

    /** Releases what the implementation holds (an HTTP client); nothing by default. */
    default void close() {
    }
}
