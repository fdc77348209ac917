package dev.stitch.testing;

import dev.stitch.board.store.StoreListener;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** A store listener that keeps what it hears, for tests of retries and byte counts. */
public final class RecordingStoreListener implements StoreListener {

    /** One reported retry. */
    public record Retry(String operation, String key, int attempt, long delayMillis, Throwable cause) {
    }

    private final List<Retry> retries = new ArrayList<>();
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();

    @Override
    public synchronized void retry(String operation, String key, int attempt, long delayMillis, Throwable cause) {
        retries.add(new Retry(operation, key, attempt, delayMillis, cause));
    }

    @Override
    public void received(long bytes) {
        received.addAndGet(bytes);
    }

    @Override
    public void sent(long bytes) {
        sent.addAndGet(bytes);
    }

    /** The retries reported so far, in order. */
    public synchronized List<Retry> retries() {
        return List.copyOf(retries);
    }

    /** The retries reported for {@code key}. */
    public synchronized List<Retry> retriesOf(String key) {
        return retries.stream().filter(r -> r.key().equals(key)).toList();
    }

    public long received() {
        return received.get();
    }

    public long sent() {
        return sent.get();
    }

    /** Forgets everything heard so far. */
    public synchronized void clear() {
        retries.clear();
        received.set(0);
        sent.set(0);
    }
}
