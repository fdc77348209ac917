package dev.stitch.board;

/** {@code PointerSkip}: the version is more than one past the run's latest. */
public final class PointerSkipException extends PointerMoveException {
    public PointerSkipException(String message) {
        super(message);
    }
}
