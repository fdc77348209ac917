package dev.stitch.board;

/** {@code PointerConflict}: another run owns the board and the version is not 1 (a fenced-out trainer). */
public final class PointerConflictException extends PointerMoveException {
    public PointerConflictException(String message) {
        super(message);
    }
}
