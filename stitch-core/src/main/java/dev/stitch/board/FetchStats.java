package dev.stitch.board;

import dev.stitch.board.store.StoreListener;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a remote board moved (docs/protocol/board.md §7.5): bytes fetched and published, retries,
 * fetches refused by verification, pointer polls and how many the server answered "not modified",
 * and the seconds spent fetching each version. Thread-safe; exported on the sidecar's {@code /metrics}.
 */
public final class FetchStats implements StoreListener {
    private final LongAdder bytesReceived = new LongAdder();
    private final LongAdder bytesSent = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final LongAdder verificationFailures = new LongAdder();
    private final LongAdder polls = new LongAdder();
    private final LongAdder pollsNotModified = new LongAdder();
    private final LongAdder resumedFiles = new LongAdder();
    private final AtomicLong lastVersion = new AtomicLong();
    private final ConcurrentHashMap<Long, Double> secondsByVersion = new ConcurrentHashMap<>();
    private final LongAdder fetchNanos = new LongAdder();

    @Override
    public void retry(String operation, String key, int attempt, long delayMillis, Throwable cause) {
        retries.increment();
    }

    @Override
    public void received(long bytes) {
        bytesReceived.add(bytes);
    }

    @Override
    public void sent(long bytes) {
        bytesSent.add(bytes);
    }

    void verificationFailed() {
        verificationFailures.increment();
    }

    void polled(boolean notModified) {
        polls.increment();
        if (notModified) {
            pollsNotModified.increment();
        }
    }

    void resumed() {
        resumedFiles.increment();
    }

    void fetched(long version, long nanos) {
        fetchNanos.add(nanos);
        secondsByVersion.merge(version, nanos / 1e9, Double::sum);
        lastVersion.accumulateAndGet(version, Math::max);
        // keep the map small: only recent versions are interesting on a dashboard
        secondsByVersion.keySet().removeIf(v -> v < lastVersion.get() - 64);
    }

    public long bytesReceived() {
        return bytesReceived.sum();
    }

    public long bytesSent() {
        return bytesSent.sum();
    }

    public long retries() {
        return retries.sum();
    }

    public long verificationFailures() {
        return verificationFailures.sum();
    }

    public long polls() {
        return polls.sum();
    }

    public long pollsNotModified() {
        return pollsNotModified.sum();
    }

    public long resumedFiles() {
        return resumedFiles.sum();
    }

    /** Total seconds spent fetching artifacts. */
    public double fetchSeconds() {
        return fetchNanos.sum() / 1e9;
    }

    /** Seconds spent fetching {@code version}'s artifacts (0 when it was not fetched, or long ago). */
    public double fetchSeconds(long version) {
        return secondsByVersion.getOrDefault(version, 0.0);
    }

    /** The newest version whose artifacts were fetched, or 0. */
    public long lastFetchedVersion() {
        return lastVersion.get();
    }
}
