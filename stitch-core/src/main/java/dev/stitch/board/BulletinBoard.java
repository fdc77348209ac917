package dev.stitch.board;

import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.OptionalLong;
import java.util.function.Predicate;

/**
 * The read side of a bulletin board: the pointer, each version's manifest and its verified artifacts.
 * Readers derive every path from a version number and never list directories. Every read error is an
 * exception, never "version 0". Implementations are safe for concurrent use.
 *
 * <p>Writers use {@link FilesystemBulletinBoard}, which adds publishing, claim, gc and orphan handling.
 */
public interface BulletinBoard extends java.io.Closeable {

    /** Opens a stitch-layout board at {@code root} with default options (the directory need not exist yet). */
    static BulletinBoard open(Path root) {
        return FilesystemBulletinBoard.open(root);
    }

    /** Opens a board of any layout for reading. */
    static BulletinBoard open(Path root, BoardLayout layout, BoardOptions options) {
        return switch (layout) {
            case STITCH -> FilesystemBulletinBoard.open(root, options);
            case SLIME, HEAD -> new ForeignBoard(root, layout, options);
        };
    }

    /**
     * Opens the board at {@code address} for reading: a directory with {@code layout}, or a remote
     * stitch-layout board read through the verified cache {@code remote} describes (docs/protocol/board.md §7).
     */
    static BulletinBoard open(BoardAddress address, BoardLayout layout, BoardOptions options, RemoteBoardOptions remote)
            throws IOException {
        if (!address.isRemote()) {
            return open(address.path(), layout, options);
        }
        if (layout != BoardLayout.STITCH) {
            throw new IllegalArgumentException("only stitch-layout boards can be read from " + address.uri().getScheme()
                    + ": storage; the " + layout.label() + " layout needs a directory");
        }
        return RemoteBulletinBoard.open(address, options, remote);
    }

    /** The board's root directory (for HEAD, the run directory; for a remote board, its local cache). */
    Path root();

    /** The layout this board reads. */
    BoardLayout layout();

    /**
     * Runs the refresh hook (e.g. reloading a network volume) so that the next reads see other
     * hosts' writes; {@link #readLatest()} also runs it.
     */
    void refresh() throws IOException;

    /**
     * Reads the pointer; a missing pointer file is {@link LatestPointer#EMPTY}, an unreadable or
     * malformed one is a {@link dev.stitch.protocol.ProtocolException}. For the stitch layout, a pointer
     * with a {@code manifest_checksum} is checked against its version's manifest bytes; on a remote board
     * a manifest that is not there yet is a {@link VersionNotArrivedException} (docs/protocol/board.md §7.6).
     */
    LatestPointer readLatest() throws IOException;

    /** The directory of {@code version} (it may not exist). */
    Path versionDirectory(long version);

    /**
     * Reads and validates {@code version}'s manifest: parsed (1.2), {@code version} equal to the
     * directory's, artifact paths safe.
     *
     * @throws java.nio.file.NoSuchFileException when the version has no manifest (never published, or GC'd);
     *         on a remote board, a {@link VersionNotArrivedException} when the pointer already names it
     * @throws dev.stitch.protocol.ProtocolException when it is malformed or inconsistent
     */
    Manifest readManifest(long version) throws IOException;

    /**
     * As {@link #readManifest(long)}, and checks the manifest's run against {@code pointer}: when both
     * carry a run they must be equal (1.2), else the manifest is a read error.
     */
    default Manifest readManifest(long version, LatestPointer pointer) throws IOException {
        Manifest m = readManifest(version);
        if (m.runId() != null && pointer.runId() != null && !m.runId().equals(pointer.runId())) {
            throw new dev.stitch.protocol.ProtocolException("version " + version + " belongs to run '" + m.runId()
                    + "', the pointer to run '" + pointer.runId() + "'");
        }
        return m;
    }

    /**
     * The newest version {@code <= version} whose manifest carries {@code full} artifacts, or empty when
     * there is none (the base, version 0, is then the only anchor). Versions whose manifest is missing
     * or unreadable are skipped; a search that finds no manifest in the first 1024 versions it probes
     * gives up, so a hostile pointer cannot make it walk 2^63 versions.
     */
    OptionalLong newestAnchorAtOrBelow(long version) throws IOException;

    /**
     * Verifies every artifact of {@code manifest} (1.3): the file exists inside the version directory,
     * its length equals {@code size_bytes}, its digest equals {@code checksum}.
     *
     * @param requireChecksums whether an artifact without size or checksum is a failure
     * @return what was verified
     * @throws ArtifactVerificationException naming the first bad file relative to {@link #root()}
     */
    default VerificationReport verifyArtifacts(Manifest manifest, boolean requireChecksums) throws IOException {
        return verifyArtifacts(manifest, a -> true, requireChecksums);
    }

    /** As {@link #verifyArtifacts(Manifest, boolean)}, restricted to the artifacts {@code which} accepts. */
    VerificationReport verifyArtifacts(Manifest manifest, Predicate<Artifact> which, boolean requireChecksums)
            throws IOException;

    /**
     * Tells the board that versions up to {@code version} are applied and their files no longer needed;
     * a remote board may then evict them from its cache (docs/protocol/board.md §7.5).
     */
    default void appliedUpTo(long version) {
    }

    /** Releases the board's connections and threads; a file-system board holds none. */
    @Override
    default void close() throws IOException {
    }

    /** The absolute path of {@code artifact} of {@code version} (its path was checked when the manifest was read). */
    default Path artifactPath(long version, Artifact artifact) {
        return versionDirectory(version).resolve(artifact.path());
    }
}
