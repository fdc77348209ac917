package dev.stitch.publish;

import java.util.List;

/**
 * What one {@link WeightPublisher#publish} did.
 *
 * @param version          the published version
 * @param runId            the board run it belongs to, or null for a run-less board
 * @param backend          the manifest backend actually used
 * @param encoding         the manifest {@code delta_encoding} (for stitch_delta: the format id), or null
 * @param valueMode        {@code xor} or {@code overwrite} for stitch_delta and disk_delta versions, else null
 * @param fallbackReason   why earlier backends of the list were skipped, or null when the first was used
 * @param anchor           whether the version carries {@code full} artifacts
 * @param tensors          tensors in the model
 * @param changedTensors   tensors with at least one changed element
 * @param totalElements    elements in the model
 * @param changedElements  elements whose bits changed (all of them for a full-only version)
 * @param changedBytes     bytes of the changed elements
 * @param modelBytes       bytes of the model
 * @param encodedRawBytes  transition bytes after encoding and before compression
 * @param transitionBytes  bytes of transition (and transition_meta) artifacts
 * @param fullBytes        bytes of {@code full} artifacts (anchor checkpoint)
 * @param files            artifact files written
 * @param timings          per-stage wall times
 * @param weightsDigest    digest of the published weights (docs/protocol/sync-and-engines.md §7.4), or null when not computed
 * @param notifications    the wake notifications sent to rollout hosts after the pointer moved (docs/protocol/board.md §7.7)
 */
public record PublishResult(long version, String runId, String backend, String encoding, String valueMode,
                            String fallbackReason, boolean anchor, int tensors, int changedTensors,
                            long totalElements, long changedElements, long changedBytes, long modelBytes,
                            long encodedRawBytes, long transitionBytes,
                            long fullBytes, int files, Timings timings, String weightsDigest,
                            Notifications notifications) {

    /** Changed elements over all elements. */
    public double density() {
        return totalElements == 0 ? 0.0 : (double) changedElements / totalElements;
    }

    /** Every byte written into the version directory's artifacts (the manifest excluded). */
    public long bytesWritten() {
        return transitionBytes + fullBytes;
    }

    /**
     * How the wake notifications went; they are best effort, so a failed one never fails the publish.
     *
     * @param delivered targets that answered 2xx
     * @param failed    targets that answered otherwise, failed to connect or did not answer in time
     * @param failures  one line per failed target: the URL and what went wrong
     */
    public record Notifications(int delivered, int failed, List<String> failures) {

        /** No notification configured. */
        public static final Notifications NONE = new Notifications(0, 0, List.of());

        public Notifications {
            failures = List.copyOf(failures);
        }
    }

    /**
     * Wall times of the stages, in nanoseconds.
     *
     * @param diffNanos     compare and gather against the snapshot
     * @param encodeNanos   encoding, compression and checksums of the transition, with its file writes
     *                      and fsyncs (the writers stream each file as it is encoded)
     * @param anchorNanos   writing and syncing the {@code full} checkpoint, 0 for versions without one
     * @param commitNanos   manifest, directory rename and pointer move, each synced
     * @param snapshotNanos advancing the snapshot after the commit
     * @param totalNanos    the whole call, including retention
     */
    public record Timings(long diffNanos, long encodeNanos, long anchorNanos, long commitNanos,
                          long snapshotNanos, long totalNanos) {

        /** Seconds from the start until the pointer moved (diff + encode + anchor + commit). */
        public double publishSeconds() {
            return (diffNanos + encodeNanos + anchorNanos + commitNanos) / 1e9;
        }
    }
}
