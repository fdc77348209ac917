package dev.stitch.sync;

import dev.stitch.board.VersionNotArrivedException;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sync worker's patience with a remote board whose pointer shows up before the files of the version it
 * names (docs/protocol/sync-and-engines.md §6.7): a pass that ends on a {@link VersionNotArrivedException} is a
 * wait, retried with the worker's backoff while the engine keeps serving, until the wait has lasted
 * {@code arrival_timeout_s}; then, and until a pass succeeds, a missing file is an ordinary sync error. A pass
 * that committed something restarts the clock, so a fleet that keeps up with a slowly replicating board never
 * times out. Written by the worker thread only; {@link #status} may be read from any thread.
 */
final class ArrivalWait {

    private static final Logger LOG = LoggerFactory.getLogger(ArrivalWait.class);

    private final double timeoutS;
    private final SyncMetrics metrics;
    private volatile Wait current;
    private volatile boolean expired;

    private record Wait(VersionNotArrivedException late, double sinceEpochS, long sinceNanos, int retries) {
    }

    ArrivalWait(double timeoutS, SyncMetrics metrics) {
        if (!(timeoutS >= 0)) {
            throw new IllegalArgumentException("the arrival timeout must be >= 0 s, not " + timeoutS);
        }
        this.timeoutS = timeoutS;
        this.metrics = metrics;
    }

    /** The not-arrived condition a pass failed on, if that is why it failed. */
    static Optional<VersionNotArrivedException> cause(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof VersionNotArrivedException late) {
                return Optional.of(late);
            }
        }
        return Optional.empty();
    }

    /**
     * Whether a missing file of a version the pointer names is still waited for; once a wait timed out it is
     * damage, so a delta tail may fall back to its anchor as after any verification failure.
     */
    boolean patient() {
        return !expired;
    }

    /**
     * Records a pass that ended on {@code late} and says whether to go on waiting; false means the wait ran
     * past the timeout (now or earlier) and the pass is a failure ({@link #timedOut}).
     *
     * @param progressed whether the pass committed a version before it stopped (restarts the clock)
     */
    boolean keepWaiting(VersionNotArrivedException late, boolean progressed) {
        if (expired) {
            return false;
        }
        long now = System.nanoTime();
        Wait w = current;
        w = w == null || progressed ? new Wait(late, System.currentTimeMillis() / 1000.0, now, 1)
                : new Wait(late, w.sinceEpochS(), w.sinceNanos(), w.retries() + 1);
        current = w;
        if (seconds(now - w.sinceNanos()) >= timeoutS) {
            expired = true;
            metrics.arrivalTimeout();
            return false;
        }
        metrics.arrivalWait();
        LOG.info("waiting_for_arrival: version {} is named by the board pointer but {} is not there yet (retry {})",
                late.version(), late.missingFile(), w.retries());
        return true;
    }

    /** Passes that ended waiting since the wait began; the worker's backoff grows with it. */
    int retries() {
        Wait w = current;
        return w == null ? 1 : w.retries();
    }

    /** The sync failure a wait became: what never arrived, and for how long it was awaited. */
    SyncFailure timedOut(VersionNotArrivedException late) {
        Wait w = current;
        double waited = w == null ? 0 : seconds(System.nanoTime() - w.sinceNanos());
        return new SyncFailure(String.format(Locale.ROOT, "arrival_timeout: version %d is named by the board pointer "
                + "but %s has not arrived on %s after %.1f s of waiting (arrival_timeout_s %s)", late.version(),
                late.missingFile(), late.location(), waited, SyncWorker.fmt(timeoutS)));
    }

    /** A pass succeeded: nothing is awaited, and the next missing file is waited for again. */
    void arrived() {
        current = null;
        expired = false;
    }

    /** What is awaited right now, or null (also after the wait timed out: the sync error then says it). */
    AwaitedVersion status(long nowNanos) {
        Wait w = current;
        if (w == null || expired) {
            return null;
        }
        return new AwaitedVersion(w.late().version(), w.late().pointerVersion(), w.late().missingFile(),
                w.sinceEpochS(), seconds(nowNanos - w.sinceNanos()), w.retries(), timeoutS);
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }
}
