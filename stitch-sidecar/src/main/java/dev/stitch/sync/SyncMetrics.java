package dev.stitch.sync;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counters and histograms of the sync worker (the sync half of board-and-sidecar.md 5's metric list),
 * written in Prometheus text format 0.0.4 by {@link #appendPrometheus}. Thread-safe; updates never block.
 */
public final class SyncMetrics {

    private static final double[] BUCKETS_S = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
        120, 300};

    private final Map<String, LongAdder> passes = new ConcurrentHashMap<>();
    private final Map<String, LongAdder> commits = new ConcurrentHashMap<>();
    private final LongAdder verifyFailures = new LongAdder();
    private final LongAdder preempted = new LongAdder();
    private final LongAdder unverified = new LongAdder();
    private final LongAdder appliedBytes = new LongAdder();
    final Histogram commitDuration = new Histogram();
    final Histogram enginePause = new Histogram();
    final Histogram drainWait = new Histogram();
    final Histogram stageDuration = new Histogram();
    final Histogram boardRefresh = new Histogram();

    void pass(String outcome) {
        passes.computeIfAbsent(outcome, k -> new LongAdder()).increment();
    }

    void commit(SyncPlan.Kind kind) {
        commits.computeIfAbsent(kind.label(), k -> new LongAdder()).increment();
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

    void appliedBytes(long n) {
        appliedBytes.add(n);
    }

    public long passes(String outcome) {
        LongAdder a = passes.get(outcome);
        return a == null ? 0 : a.sum();
    }

    public long commits(SyncPlan.Kind kind) {
        LongAdder a = commits.get(kind.label());
        return a == null ? 0 : a.sum();
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
        counterFamily(out, "stitch_sync_passes_total", "Sync passes by outcome.", "outcome", passes,
                new String[] {"ok", "noop", "error"});
        counterFamily(out, "stitch_commits_total", "Commits by kind.", "kind", commits,
                new String[] {"delta", "anchor", "noop", "reset"});
        counter(out, "stitch_artifact_verify_failures_total", "Artifacts that failed size or digest verification.",
                verifyFailures.sum());
        counter(out, "stitch_unverified_artifacts_total", "Artifacts accepted without size or checksum.",
                unverified.sum());
        counter(out, "stitch_applied_bytes_total", "Artifact bytes applied to the engine or the local checkpoint.",
                appliedBytes.sum());
        commitDuration.append(out, "stitch_commit_duration_seconds", "Gate closed to reopened.");
        enginePause.append(out, "stitch_engine_pause_seconds", "Engine paused during in_place commits.");
        drainWait.append(out, "stitch_drain_wait_seconds", "Time spent draining admitted requests.");
        stageDuration.append(out, "stitch_stage_duration_seconds", "Staging outside the gate.");
        boardRefresh.append(out, "stitch_board_refresh_seconds", "Board refresh and pointer read.");
    }

    private static void counterFamily(StringBuilder out, String name, String help, String label,
                                      Map<String, LongAdder> values, String[] known) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" counter\n");
        for (String k : known) {
            LongAdder a = values.get(k);
            out.append(name).append('{').append(label).append("=\"").append(k).append("\"} ")
                    .append(a == null ? 0 : a.sum()).append('\n');
        }
    }

    private static void counter(StringBuilder out, String name, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" counter\n");
        out.append(name).append(' ').append(value).append('\n');
    }

    static String number(double v) {
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
