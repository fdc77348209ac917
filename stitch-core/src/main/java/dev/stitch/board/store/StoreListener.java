package dev.stitch.board.store;

/**
 * Hears what a store does on the wire, for metrics and progress. Called from the store's threads;
 * implementations must be cheap and thread-safe.
 */
public interface StoreListener {
    /** Hears nothing. */
    StoreListener NONE = new StoreListener() {
    };

    /** A request failed transiently and will be tried again after {@code delayMillis}. */
    default void retry(String operation, String key, int attempt, long delayMillis, Throwable cause) {
    }

    /** {@code bytes} more were received from the store. */
    default void received(long bytes) {
    }

    /** {@code bytes} more were sent to the store. */
    default void sent(long bytes) {
    }
}
