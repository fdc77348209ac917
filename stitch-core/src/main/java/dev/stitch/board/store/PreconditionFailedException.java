package dev.stitch.board.store;

import java.io.IOException;

/** A conditional write was refused ({@code 412}): the object exists, or it changed since it was read. */
public final class PreconditionFailedException extends IOException {
    private final String key;

    public PreconditionFailedException(String key, String message) {
        super(message);
        this.key = key;
    }

    /** The board-relative key of the refused write. */
    public String key() {
        return key;
    }
}
