package dev.stitch.sync;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters and histograms of the sync worker (the sync half of docs/protocol/sidecar-http.md §5's metric list),
 * written in Prometheus text format 0.0.4 by {@link #appendPrometheus}. Thread-safe; updates never block.
 */
public final class SyncMetrics {

    private static final double[] BUCKETS_S = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
        120, 300};

    /** How a sync pass ended; {@link #label()} is the Prometheus label value. */
    public enum PassOutcome {
        /** It committed at least once. */
        OK("ok"),
        /** The replica was already current. */
        NOOP("noop"),
        /** It failed and backs off. */
        ERROR("error");

        private final String label;

        PassOutcome(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    // Filled once for every key and never modified after, so concurrent reads need no locking.
    private final Map<PassOutcome, LongAdder> passes = filled(PassOutcome.class);
    private final Map<SyncPlan.Kind, LongAdder> commits = filled(SyncPlan.Kind.class);
    private final LongAdder verifyFailures = new LongAdder();
    private final LongAdder preempted = new LongAdder();
    private final LongAdder unverified = new LongAdder();
    private final LongAdder appliedBytes = new LongAdder();
    private final LongAdder refusedVersions = new LongAdder();
    private final LongAdder engineLosses = new LongAdder();
    private final LongAdder arrivalWaits = new LongAdder();
    private final LongAdder arrivalTimeouts = new LongAdder();
    final Histogram commitDuration = new Histogram();
    final Histogram enginePause = new Histogram();
    final Histogram drainWait = new Histogram();
    final Histogram stageDuration = new Histogram();
    final Histogram boardRefresh = new Histogram();

    private static <K extends Enum<K>> Map<K, LongAdder> filled(Class<K> keys) {
        Map<K, LongAdder> m = new EnumMap<>(keys);
        for (K k : keys.getEnumConstants()) {
            m.put(k, new LongAdder());
        }
        return m;
    }

    void pass(PassOutcome outcome) {
        passes.get(outcome).increment();
    }

    void commit(SyncPlan.Kind kind) {
        commits.get(kind).increment();
    }

    void verifyFailure() {
        verifyFailures.increment();
    }

    void preempted(int n) {
        preempted.add(n);
    }

    void unverified(int n) {
        unverified.add(n);
    }

    void refusedVersion() {
        refusedVersions.increment();
    }

    void engineLost() {
        engineLosses.increment();
    }

    void arrivalWait() {
        arrivalWaits.increment();
    }

    void arrivalTimeout() {
        arrivalTimeouts.increment();
    }

    /** Passes that ended waiting for a version's files to arrive (sync-and-engines.md §6.7). */
    public long arrivalWaits() {
        return arrivalWaits.sum();
    }

    /** Waits for arrival that ran past {@code arrival_timeout_s} and became sync errors. */
    public long arrivalTimeouts() {
        return arrivalTimeouts.sum();
    }

    public long refusedVersions() {
        return refusedVersions.sum();
    }

    public long engineLosses() {
        return engineLosses.sum();
    }

    void appliedBytes(long n) {
        appliedBytes.add(n);
    }

    public long passes(PassOutcome outcome) {
        return passes.get(outcome).sum();
    }

    public long commits(SyncPlan.Kind kind) {
        return commits.get(kind).sum();
    }

    public long appliedBytes() {
        return appliedBytes.sum();
    }

    public long preemptedRequests() {
        return preempted.sum();
    }

    public long artifactVerifyFailures() {
        return verifyFailures.sum();
    }

    public long unverifiedArtifacts() {
        return unverified.sum();
    }

    /**
     * Appends every sync counter and histogram, prefixed {@code stitch_}. Preemptions are exposed by the
     * data plane ({@code stitch_drain_preempted_requests_total}), which answers the preempted clients.
     */
    public void appendPrometheus(StringBuilder out) {
        header(out, "stitch_sync_passes_total", "Sync passes by outcome.", "counter");
        for (PassOutcome o : PassOutcome.values()) {
            labelled(out, "stitch_sync_passes_total", "outcome", o.label(), passes.get(o).sum());
        }
        header(out, "stitch_commits_total", "Commits by kind.", "counter");
        for (SyncPlan.Kind k : SyncPlan.Kind.values()) {
            labelled(out, "stitch_commits_total", "kind", k.label(), commits.get(k).sum());
        }
        counter(out, "stitch_artifact_verify_failures_total", "Artifacts that failed size or digest verification.",
                verifyFailures.sum());
        counter(out, "stitch_unverified_artifacts_total", "Artifacts accepted without size or checksum.",
                unverified.sum());
        counter(out, "stitch_applied_bytes_total", "Artifact bytes applied to the engine or the local checkpoint.",
                appliedBytes.sum());
        counter(out, "stitch_refused_versions_total", "Versions the engine or host applier refused; re-planned "
                + "through an anchor.", refusedVersions.sum());
        counter(out, "stitch_engine_lost_total", "Times the engine was found unreachable or restarted.",
                engineLosses.sum());
        counter(out, "stitch_sync_arrival_waits_total", "Passes that ended waiting for files of a version the "
                + "pointer names to arrive on the remote board.", arrivalWaits.sum());
        counter(out, "stitch_sync_arrival_timeouts_total", "Waits for arrival that ran past arrival_timeout_s and "
                + "became sync errors.", arrivalTimeouts.sum());
        commitDuration.append(out, "stitch_commit_duration_seconds", "Gate closed to reopened.");
        enginePause.append(out, "stitch_engine_pause_seconds", "Engine paused during in_place commits.");
        drainWait.append(out, "stitch_drain_wait_seconds", "Time spent draining admitted requests.");
        stageDuration.append(out, "stitch_stage_duration_seconds", "Staging outside the gate.");
        boardRefresh.append(out, "stitch_board_refresh_seconds", "Board refresh and pointer read.");
    }

    /** The remote board's transfer counters (docs/protocol/board.md §7.5), when the board is remote. */
    public static void appendFetch(dev.stitch.board.FetchStats f, StringBuilder out) {
        counter(out, "stitch_fetch_bytes_total", "Bytes received from the remote board.", f.bytesReceived());
        counter(out, "stitch_fetch_retries_total", "Requests to the remote board retried after a transient failure.",
                f.retries());
        counter(out, "stitch_fetch_verification_failures_total",
                "Fetched files refused because their size or digest did not match the manifest.", f.verificationFailures());
        counter(out, "stitch_fetch_resumed_files_total", "Fetches resumed after a verified prefix.", f.resumedFiles());
        counter(out, "stitch_board_polls_total", "Pointer reads of the remote board.", f.polls());
        counter(out, "stitch_board_polls_not_modified_total", "Pointer reads answered 304 Not Modified.",
                f.pollsNotModified());
        header(out, "stitch_fetch_seconds_total", "Seconds spent fetching artifacts.", "counter");
        out.append("stitch_fetch_seconds_total ").append(String.format(Locale.ROOT, "%.6f", f.fetchSeconds())).append('\n');
        long last = f.lastFetchedVersion();
        header(out, "stitch_fetch_last_version_seconds", "Seconds spent fetching the newest fetched version.", "gauge");
        out.append("stitch_fetch_last_version_seconds{version=\"").append(last).append("\"} ")
                .append(String.format(Locale.ROOT, "%.6f", f.fetchSeconds(last))).append('\n');
    }

    private static void header(StringBuilder out, String name, String help, String type) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    private static void labelled(StringBuilder out, String name, String label, String value, long count) {
        out.append(name).append('{').append(label).append("=\"").append(value).append("\"} ").append(count)
                .append('\n');
    }

    private static void counter(StringBuilder out, String name, String help, long value) {
        header(out, name, help, "counter");
        out.append(name).append(' ').append(value).append('\n');
    }

    /** A sample value in the exposition format: fixed point, locale-independent. */
    public static String number(double v) {
        return String.format(Locale.ROOT, "%.6f", v);
    }

    /** A fixed-bucket histogram of seconds. */
    static final class Histogram {
        private final long[] counts = new long[BUCKETS_S.length];
        private long count;
        private double sum;

        synchronized void observe(double seconds) {
            for (int i = 0; i < BUCKETS_S.length; i++) {
                if (seconds <= BUCKETS_S[i]) {
                    counts[i]++;
                }
            }
            count++;
            sum += seconds;
        }

        synchronized long count() {
            return count;
        }

        synchronized void append(StringBuilder out, String name, String help) {
            out.append("# HELP ").append(name).append(' ').append(help).append('\n');
            out.append("# TYPE ").append(name).append(" histogram\n");
            for (int i = 0; i < BUCKETS_S.length; i++) {
                out.append(name).append("_bucket{le=\"").append(BUCKETS_S[i]).append("\"} ").append(counts[i])
                        .append('\n');
            }
            out.append(name).append("_bucket{le=\"+Inf\"} ").append(count).append('\n');
            out.append(name).append("_sum ").append(number(sum)).append('\n');
            out.append(name).append("_count ").append(count).append('\n');
        }
    }
}
