package dev.stitch.sync;

import java.util.Map;
import java.util.Objects;

/**
 * A consistent-enough snapshot of the sync worker for the sidecar endpoints; taking it never waits
 * for board or engine I/O.
 *
 * @param queuedTargetVersion the target of the pass queued or running, or null when idle
 * @param nextRetryAt         epoch seconds of the next retry while in ERROR, else null
 * @param lastCommitAt        epoch seconds of the last flip, or null
 * @param lastMetrics         {@code server_info.metrics} (6.6), empty before the first pass with work
 * @param awaiting            the version whose files the worker waits for (6.7), or null
 */
public record SyncStatus(String currentRunId, long currentVersion, String latestRunId, long latestSeenVersion,
                         Long queuedTargetVersion, long wantedVersion, SyncState state, String lastSyncError,
                         boolean syncTaskActive, boolean ready, String readyReason, boolean engineConsistent,
                         int consecutiveErrors, Double nextRetryAt, Double lastCommitAt, boolean engineReachable,
                         String admission, int activeRequests, int inflightExactRequests,
                         Map<Long, Integer> inflightExactVersions, Map<String, Object> lastMetrics,
                         AwaitedVersion awaiting) {

    /** {@code max(0, latest_seen − current)} within the run; 0 across a run change not yet applied. */
    public long behindBy() {
        if (!Objects.equals(currentRunId, latestRunId)) {
            return latestSeenVersion;
        }
        return Math.max(0, latestSeenVersion - currentVersion);
    }
}
