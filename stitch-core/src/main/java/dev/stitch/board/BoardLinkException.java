package dev.stitch.board;

import dev.stitch.protocol.ProtocolException;

/**
 * A board entry a reader needs (pointer, version directory, manifest) is a symbolic link or is reached
 * through one; readers follow no link inside the board (docs/protocol/board.md §1.6), so the entry reads as
 * corrupt rather than as whatever the link points at.
 */
public final class BoardLinkException extends ProtocolException {
    private final String path;
    private final String link;

    /**
     * @param path the entry that was to be read, relative to the board root
     * @param link the symbolic link on the way to it (possibly {@code path} itself), relative to the root
     */
    public BoardLinkException(String path, String link) {
        super(path + ": refused: " + link + " is a symbolic link (readers follow no links inside the board)");
        this.path = path;
        this.link = link;
    }

    /** The entry that was to be read, relative to the board root. */
    public String path() {
        return path;
    }

    /** The symbolic link found on the way to it, relative to the board root. */
    public String link() {
        return link;
    }
}
