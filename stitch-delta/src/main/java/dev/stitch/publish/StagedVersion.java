package dev.stitch.publish;

import dev.stitch.encode.EncodedVersion;
import dev.stitch.format.DeltaFormat;

/** What staging one version produced, up to and including the pointer move; filled in as it goes. */
final class StagedVersion {
    EncodedVersion encoded;
    DeltaFormat format;
    String encoding;
    String valueMode;
    String fallbackReason;
    boolean anchor;
    long rawBytes;
    long transitionBytes;
    long fullBytes;
    int files;
    long encodeNanos;
    long anchorNanos;
    long commitNanos;
    String weightsDigest;

    /**
     * The caller's report, once the snapshot advanced ({@code snapshotNanos}), the rollout hosts were notified and
     * the whole call took {@code totalNanos}.
     */
    PublishResult result(long version, String runId, long snapshotNanos, long totalNanos,
                         PublishResult.Notifications notifications) {
        PublishResult.Timings timings = new PublishResult.Timings(encoded.diffNanos(), encodeNanos, anchorNanos,
                commitNanos, snapshotNanos, totalNanos);
        EncodedVersion e = encoded;
        return new PublishResult(version, runId, format.id(), encoding, valueMode, fallbackReason, anchor, e.tensors(),
                e.changes().size(), e.totalElements(), e.changedElements(), e.changedBytes(), e.totalBytes(), rawBytes,
                transitionBytes, fullBytes, files, timings, weightsDigest, notifications);
    }
}
