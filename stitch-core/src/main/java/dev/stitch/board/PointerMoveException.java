package dev.stitch.board;

import java.io.IOException;

/**
 * The pointer-move rule (docs/protocol/board.md §2.2) refused a claim or publish; the pointer is
 * untouched. The subclasses name the case.
 */
public abstract sealed class PointerMoveException extends IOException
        permits PointerRewindException, PointerSkipException, PointerConflictException {
    PointerMoveException(String message) {
        super(message);
    }
}
