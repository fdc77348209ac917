package dev.stitch.board;

/** {@code PointerRewind}: the version is already published in this run (versions are immutable). */
public final class PointerRewindException extends PointerMoveException {
    public PointerRewindException(String message) {
        super(message);
    }
}
