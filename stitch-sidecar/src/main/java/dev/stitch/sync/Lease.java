package dev.stitch.sync;

/** An admitted versioned request; counts toward drains until released. */
public interface Lease {

    /** The version served when the request was admitted (response stamp {@code start}). */
    long startVersion();

    /** The run served at admission, or null for a run-less board. */
    String runId();

    /**
     * Releases the lease; idempotent.
     *
     * @return the version served at release time (response stamp {@code end}), captured before releasing
     */
    long release();

    /**
     * Registers the action to run if a drain times out while this request is still in flight: the
     * data plane aborts the upstream request and answers 503 RequestPreempted. Runs at most once.
     */
    void onPreempt(Runnable action);
}
