package dev.stitch.sync;

import java.nio.file.Path;

/**
 * Tunables of the sync worker (docs/protocol/cli-and-config.md §8); durations in seconds as in the spec.
 *
 * @param commitMode          quiesce or in_place
 * @param pollIntervalS       periodic board poll; 0 disables it
 * @param minRefreshIntervalS rate limit of the refresh hook, except for explicit RPC wakes
 * @param drainTimeoutS       drain bound before preemption; 0 = unbounded
 * @param abortGraceS         how long preempted requests get to finish before the commit fails
 * @param backoffInitialS     first retry delay after a failure
 * @param backoffMaxS         cap of the retry delay
 * @param commitRetries       extra commit attempts after the engine started mutating weights
 * @param maxReplayVersions   longest delta replay preferred over an anchor
 * @param requireChecksums    refuse artifacts without size/checksum
 * @param engineStartTimeoutS how long startup waits for the engine's /health before the first commit
 * @param engineProbeIntervalS period of the engine probe (health and identity, 6.5); 0 disables it
 * @param bootRunId           run the engine booted with (null = adopt the first pointer's run at version 0)
 * @param bootVersion         version the engine booted with
 * @param stateDir            where {@code sidecar_state.json} is persisted; null = not persisted
 * @param arrivalTimeoutS     how long a remote board's version named by the pointer may lack files before
 *                            the wait for it becomes an error (docs/protocol/sync-and-engines.md §6.7)
 */
public record SyncConfig(CommitMode commitMode, double pollIntervalS, double minRefreshIntervalS,
                         double drainTimeoutS, double abortGraceS, double backoffInitialS, double backoffMaxS,
                         int commitRetries, int maxReplayVersions, boolean requireChecksums,
                         double engineStartTimeoutS, double engineProbeIntervalS, String bootRunId,
                         long bootVersion, Path stateDir, double arrivalTimeoutS) {

    /** The defaults of section 8. */
    public static SyncConfig defaults() {
        return new SyncConfig(CommitMode.QUIESCE, 5.0, 1.0, 60, 10, 1, 60, 2, 8, false, 1800, 1.0, null, 0, null, 600);
    }

    public SyncConfig withCommitMode(CommitMode m) {
        return new SyncConfig(m, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS, backoffInitialS,
                backoffMaxS, commitRetries, maxReplayVersions, requireChecksums, engineStartTimeoutS,
                engineProbeIntervalS, bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withPolling(double pollS, double minRefreshS) {
        return new SyncConfig(commitMode, pollS, minRefreshS, drainTimeoutS, abortGraceS, backoffInitialS,
                backoffMaxS, commitRetries, maxReplayVersions, requireChecksums, engineStartTimeoutS,
                engineProbeIntervalS, bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withDrain(double timeoutS, double graceS) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, timeoutS, graceS, backoffInitialS,
                backoffMaxS, commitRetries, maxReplayVersions, requireChecksums, engineStartTimeoutS,
                engineProbeIntervalS, bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withBackoff(double initialS, double maxS) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS, initialS,
                maxS, commitRetries, maxReplayVersions, requireChecksums, engineStartTimeoutS,
                engineProbeIntervalS, bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withBoot(String runId, long version, Path dir) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS,
                backoffInitialS, backoffMaxS, commitRetries, maxReplayVersions, requireChecksums,
                engineStartTimeoutS, engineProbeIntervalS, runId, version, dir, arrivalTimeoutS);
    }

    public SyncConfig withLimits(int retries, int maxReplay, boolean checksums, double startTimeoutS) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS,
                backoffInitialS, backoffMaxS, retries, maxReplay, checksums, startTimeoutS, engineProbeIntervalS,
                bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withEngineProbeInterval(double probeS) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS,
                backoffInitialS, backoffMaxS, commitRetries, maxReplayVersions, requireChecksums,
                engineStartTimeoutS, probeS, bootRunId, bootVersion, stateDir, arrivalTimeoutS);
    }

    public SyncConfig withArrivalTimeout(double timeoutS) {
        return new SyncConfig(commitMode, pollIntervalS, minRefreshIntervalS, drainTimeoutS, abortGraceS,
                backoffInitialS, backoffMaxS, commitRetries, maxReplayVersions, requireChecksums,
                engineStartTimeoutS, engineProbeIntervalS, bootRunId, bootVersion, stateDir, timeoutS);
    }
}
