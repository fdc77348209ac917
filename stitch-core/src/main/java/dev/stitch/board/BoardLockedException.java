package dev.stitch.board;

import java.io.IOException;

/** {@code BoardLocked}: the board lock could not be taken within {@code lock_timeout_s}. */
public final class BoardLockedException extends IOException {
    public BoardLockedException(String message) {
        super(message);
    }
}
