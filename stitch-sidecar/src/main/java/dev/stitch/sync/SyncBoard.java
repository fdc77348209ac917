package dev.stitch.sync;

import dev.stitch.apply.VersionStep;
import java.io.IOException;
import java.util.Optional;

/**
 * The board as the sync worker reads it: the pointer, one version's manifest summary, artifact
 * verification. Implementations wrap the bulletin board of {@code dev.stitch.board}; every call does
 * file-system I/O and is made only from the worker thread.
 */
public interface SyncBoard {

    /** The pointer {@code (run, version)} of {@code latest}; {@code run} may be null. */
    record Pointer(String runId, long version) {
    }

    /** Board layout name ({@code stitch}, {@code slime}, {@code head}). */
    String layout();

    /** Runs the refresh hook (e.g. a network-volume reload). */
    void refresh() throws IOException;

    /** Reads the pointer; a read error is an exception (never version 0). */
    Pointer readPointer() throws IOException;

    /**
     * Reads and validates version {@code v}'s manifest.
     *
     * @throws java.nio.file.NoSuchFileException when the version has no manifest (missing or GC'd)
     * @throws IOException                        when it is unreadable or invalid
     */
    VersionStep readVersion(long version) throws IOException;

    /**
     * The {@code metadata.weights_digest} version {@code v}'s manifest records, if any: the digest of the
     * complete weights after it, which an engine that reports its own digest is checked against (6.5).
     * Boards whose manifests carry no metadata (the slime layout) record none.
     */
    default Optional<String> weightsDigest(long version) throws IOException {
        return Optional.empty();
    }

    /**
     * Verifies every artifact the plan will use from this version (size and digest, 1.3).
     *
     * @param includeFull whether the {@code full} artifacts are used (anchor load)
     * @return the verified byte count and how many artifacts had no size/checksum
     * @throws IOException describing the first bad artifact
     */
    Verification verify(VersionStep version, boolean includeFull, boolean requireChecksums) throws IOException;

    /**
     * Versions up to {@code version} are applied; a remote board's cache may evict their files
     * (docs/protocol/board.md §7.5).
     */
    default void applied(long version) {
    }

    /** What a remote board fetched (bytes, retries, verification failures, seconds per version), if it is one. */
    default Optional<dev.stitch.board.FetchStats> fetchStats() {
        return Optional.empty();
    }

    /** Result of {@link #verify}. */
    record Verification(long bytesVerified, int unverifiedArtifacts) {
    }
}
