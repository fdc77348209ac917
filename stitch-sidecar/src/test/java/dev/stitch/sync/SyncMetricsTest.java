package dev.stitch.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SyncMetricsTest {

    @Test
    void everyOutcomeAndKindIsExposedEvenAtZero() {
        SyncMetrics m = new SyncMetrics();
        m.pass(SyncMetrics.PassOutcome.OK);
        m.pass(SyncMetrics.PassOutcome.OK);
        m.pass(SyncMetrics.PassOutcome.ERROR);
        m.commit(SyncPlan.Kind.ANCHOR);
        assertEquals(2, m.passes(SyncMetrics.PassOutcome.OK));
        assertEquals(1, m.commits(SyncPlan.Kind.ANCHOR));
        assertEquals(0, m.commits(SyncPlan.Kind.RESET));

        StringBuilder out = new StringBuilder();
        m.appendPrometheus(out);
        String text = out.toString();
        assertTrue(text.startsWith("""
                # HELP stitch_sync_passes_total Sync passes by outcome.
                # TYPE stitch_sync_passes_total counter
                stitch_sync_passes_total{outcome="ok"} 2
                stitch_sync_passes_total{outcome="noop"} 0
                stitch_sync_passes_total{outcome="error"} 1
                # HELP stitch_commits_total Commits by kind.
                # TYPE stitch_commits_total counter
                stitch_commits_total{kind="delta"} 0
                stitch_commits_total{kind="anchor"} 1
                stitch_commits_total{kind="noop"} 0
                stitch_commits_total{kind="reset"} 0
                # HELP stitch_artifact_verify_failures_total"""), text);
    }
}
