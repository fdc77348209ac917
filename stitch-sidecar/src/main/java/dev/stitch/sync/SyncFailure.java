package dev.stitch.sync;

/** A sync pass failure whose message is the whole story (no stack trace needed). */
final class SyncFailure extends Exception {
    private static final long serialVersionUID = 1L;

    SyncFailure(String message) {
        super(message);
    }
}
