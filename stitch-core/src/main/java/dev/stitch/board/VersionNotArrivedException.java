package dev.stitch.board;

import java.nio.file.NoSuchFileException;

/**
 * A file of a version that the pointer already names is not on a remote board yet (docs/protocol/board.md
 * §7.6). Replication to another region or a cache filling can show the pointer before the version's manifest
 * or artifacts, so a reader waits and retries instead of treating the absence as damage. Only remote boards
 * throw it; on a directory board the publisher wrote every file before the pointer, so a missing one is damage.
 * It is a {@link NoSuchFileException}, so code that handles a missing version (the anchor search, the planner's
 * walk down the tail) keeps doing so.
 */
public final class VersionNotArrivedException extends NoSuchFileException {
    private static final long serialVersionUID = 1L;

    private final long version;
    private final long pointerVersion;
    private final String location;

    /**
     * @param file           the missing file, relative to the board
     * @param version        the version it belongs to
     * @param pointerVersion the version the pointer names (at least {@code version})
     * @param location       where the board lives, for the message
     */
    public VersionNotArrivedException(String file, long version, long pointerVersion, String location) {
        super(file, null, "not on " + location + " yet, though the pointer names version " + pointerVersion);
        this.version = version;
        this.pointerVersion = pointerVersion;
        this.location = location;
    }

    /** The version whose file is missing. */
    public long version() {
        return version;
    }

    /** The version the pointer named when the file was found missing. */
    public long pointerVersion() {
        return pointerVersion;
    }

    /** Where the board lives. */
    public String location() {
        return location;
    }

    /** The missing file, relative to the board. */
    public String missingFile() {
        return getFile();
    }
}
