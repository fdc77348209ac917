package dev.stitch.board;

import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Unwedges a board whose latest version cannot be read or verified (docs/protocol/board.md §1.6): while
 * {@code latest.json} carries the {@code manifest_checksum} of a missing or corrupt manifest, every pointer
 * read fails, publishers included. The repair moves the broken version directory aside (as
 * {@code versions/.weight_vNNNNNN.<hex>.broken}, collected later by gc) and rewrites the pointer at the
 * same run and version without {@code manifest_checksum}. The pointer never moves back — within a run it
 * only grows (1.1, 2.2) — so no replica sees a rewind; replicas read the version as deleted and wait for an
 * anchor, and the next publish ({@code version + 1}) proceeds. A board whose latest version verifies is
 * never changed, and nothing is changed when the pointer moved while the version was being checked.
 */
public final class BoardRepair {
    private static final Logger LOG = LoggerFactory.getLogger(BoardRepair.class);

    private BoardRepair() {
    }

    /**
     * What a repair found and did.
     *
     * @param pointer          the pointer that was examined
     * @param problem          why its version is broken, or null when the board is healthy
     * @param movedAside       the version directory that is (or, in a dry run, would be) moved aside,
     *                         relative to the root, or null
     * @param movedTo          where it went, relative to the root; null in a dry run or when nothing moved
     * @param pointerRewritten whether the pointer is (or would be) rewritten without {@code manifest_checksum}
     * @param changed          whether the board was changed
     */
    public record Report(LatestPointer pointer, String problem, String movedAside, String movedTo,
                        boolean pointerRewritten, boolean changed) {
    }

    /**
     * Checks the latest version (manifest readable and linked to no other place, its digest equal to the
     * pointer's {@code manifest_checksum}, its run equal to the pointer's, every known artifact present with
     * its size and digest) and repairs the board when it fails.
     *
     * @param dryRun report what would be done and change nothing
     * @throws ProtocolException when {@code latest.json} itself cannot be read: the version to repair is then
     *                           unknown, and guessing it could rewind the board
     * @throws IOException       when the check hits an I/O error that says nothing about the version, or the
     *                           pointer moved during the check (nothing is changed then)
     */
    public static Report repair(FilesystemBulletinBoard board, boolean dryRun) throws IOException {
        board.refresh();
        byte[] pointerBytes = readPointerBytes(board);
        if (pointerBytes == null) {
            return new Report(LatestPointer.EMPTY, null, null, null, false, false);
        }
        LatestPointer pointer = parsePointer(pointerBytes);
        String problem = pointer.version() == 0 ? null : diagnose(board, pointer);
        if (problem == null) {
            return new Report(pointer, null, null, null, false, false);
        }
        long version = pointer.version();
        Path dir = board.versionDirectory(version);
        boolean present = Files.exists(dir, LinkOption.NOFOLLOW_LINKS);
        String movedAside = present ? ArtifactVerifier.relative(board.root(), dir) : null;
        boolean rewrite = pointer.manifestChecksum() != null;
        if (dryRun || (!present && !rewrite)) {
            return new Report(pointer, problem, movedAside, null, rewrite, false);
        }
        String movedTo = null;
        try (BoardLock lock = BoardLock.acquire(board.root(), board.options())) {
            if (!Arrays.equals(pointerBytes, readPointerBytes(board))) {
                throw new IOException(LatestPointer.FILE_NAME + " changed while version " + version
                        + " was being checked; nothing was changed, run the repair again");
            }
            if (present) {
                Path aside = board.versionsPath().resolve("." + WeightIdentity.format(version) + "."
                        + AtomicFiles.randomHex16() + FilesystemBulletinBoard.BROKEN_SUFFIX);
                board.options().files().move(dir, aside);
                board.options().files().fsyncDirectory(board.versionsPath());
                movedTo = ArtifactVerifier.relative(board.root(), aside);
            }
            if (rewrite) {
                board.writePointer(new LatestPointer(pointer.runId(), version, board.now(), null));
            }
        }
        LOG.warn("repaired board {}: version {} is broken ({}); moved aside to {}, pointer rewritten: {}", board.root(),
                version, problem, movedTo, rewrite);
        return new Report(pointer, problem, movedAside, movedTo, rewrite, true);
    }

    private static byte[] readPointerBytes(FilesystemBulletinBoard board) throws IOException {
        try {
            return board.readPointerBytes();
        } catch (BoardLinkException e) {
            throw new ProtocolException(e.getMessage() + "; repair fixes the latest version, not the pointer file");
        }
    }

    private static LatestPointer parsePointer(byte[] bytes) throws ProtocolException {
        try {
            return LatestPointer.parse(bytes, LatestPointer.FILE_NAME);
        } catch (ProtocolException e) {
            throw new ProtocolException(e.getMessage() + "; the version to repair is unknown, so repair changes nothing"
                    + " (restore " + LatestPointer.FILE_NAME + " by hand)", e);
        }
    }

    /** Why the pointer's version cannot be used, or null when it verifies; I/O errors that are no verdict propagate. */
    private static String diagnose(FilesystemBulletinBoard board, LatestPointer pointer) throws IOException {
        long version = pointer.version();
        String manifestFile = board.relManifest(version);
        byte[] bytes;
        try {
            bytes = board.readManifestBytes(version);
        } catch (NoSuchFileException e) {
            return manifestFile + ": is missing";
        } catch (ProtocolException e) {
            return e.getMessage();
        }
        if (pointer.manifestChecksum() != null) {
            String actual = FilesystemBulletinBoard.manifestChecksum(bytes);
            if (!actual.equalsIgnoreCase(pointer.manifestChecksum())) {
                return manifestFile + ": its digest " + actual + " is not the pointer's manifest_checksum "
                        + pointer.manifestChecksum();
            }
        }
        Manifest manifest;
        try {
            manifest = FilesystemBulletinBoard.parseManifest(version, bytes);
            if (manifest.runId() != null && pointer.runId() != null && !manifest.runId().equals(pointer.runId())) {
                return manifestFile + ": belongs to run '" + manifest.runId() + "', the pointer to run '"
                        + pointer.runId() + "'";
            }
        } catch (ProtocolException e) {
            return e.getMessage().startsWith(manifestFile) ? e.getMessage() : manifestFile + ": " + e.getMessage();
        }
        try {
            board.verifyArtifacts(manifest, false);
        } catch (ArtifactVerificationException e) {
            return e.getMessage();
        }
        return null;
    }
}
