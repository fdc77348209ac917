package dev.stitch.board;

import dev.stitch.protocol.LatestPointer;
import java.io.IOException;
import java.util.List;

/**
 * A board that can be published to: a file-system board, or a remote one on object storage
 * (docs/protocol/board.md §2 and §7.3). Publishing is a transaction: {@link #beginPublish}, write the
 * artifacts, commit; readers see nothing until the pointer moves.
 */
public interface PublishingBoard extends BulletinBoard {

    /**
     * Opens the board at {@code address} for publishing (nothing is created).
     *
     * @throws IOException when the address is read-only (HTTP) or its store cannot be opened
     */
    static PublishingBoard open(BoardAddress address, BoardOptions options, RemoteBoardOptions remote) throws IOException {
        if (!address.isRemote()) {
            return FilesystemBulletinBoard.open(address.path(), options);
        }
        if (!address.isWritable()) {
            throw new IOException(address + " is read-only: publish to the s3:// or file: board it serves");
        }
        return RemoteBulletinBoard.open(address, options, remote);
    }

    /**
     * Creates the board at {@code address} (its pointer at version 0, with {@code runId} as a claim when
     * given) unless it exists, and opens it.
     */
    static PublishingBoard create(BoardAddress address, String runId, BoardOptions options, RemoteBoardOptions remote)
            throws IOException {
        if (!address.isRemote()) {
            return FilesystemBulletinBoard.create(address.path(), runId, options);
        }
        if (!address.isWritable()) {
            throw new IOException(address + " is read-only: create the board on the s3:// or file: storage it serves");
        }
        return RemoteBulletinBoard.create(address, runId, options, remote);
    }

    /** The options this board was opened with. */
    BoardOptions options();

    /**
     * Starts publishing {@code version} of run {@code runId} (null = a run-less board), after checking
     * the move against the pointer (2.3 step 1) and performing the implicit claim of a new run.
     *
     * @throws PointerRewindException   the version is already published in this run
     * @throws PointerSkipException     the version is more than one past latest
     * @throws PointerConflictException another run owns the board and {@code version > 1}
     * @throws BoardLockedException     another publisher holds the version (remote boards)
     */
    VersionPublication beginPublish(String runId, long version) throws IOException;

    /** Starts run {@code runId} (2.4): the pointer becomes {@code (runId, 0)}. */
    LatestPointer claim(String runId) throws IOException;

    /** Retention (2.5) and crash leftovers; see the implementations for what each removes. */
    GcReport gc(int keepLast, long minAgeSeconds) throws IOException;

    /** What crashed or abandoned publishes left, relative to the board's root. */
    List<String> leftovers() throws IOException;
}
