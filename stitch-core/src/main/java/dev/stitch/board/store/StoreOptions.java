package dev.stitch.board.store;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * How a remote board's store talks to its server (docs/protocol/board.md §7.5).
 *
 * @param attempts        tries per request, the first included, before a transient failure surfaces
 * @param backoffBase     the first retry's delay bound; each further retry doubles it (full jitter)
 * @param backoffMax      the largest delay between two tries
 * @param timeout         connect timeout, and the longest wait for the next bytes of a response
 * @param partBytes       multipart upload part size
 * @param concurrency     parts in flight per upload, and parallel ranged reads per file
 * @param s3Endpoint      S3 endpoint override (an S3-compatible store), or null for the AWS chain
 *                        ({@code AWS_ENDPOINT_URL_S3}, {@code AWS_ENDPOINT_URL}, then AWS itself)
 * @param s3PathStyle     path-style bucket addressing ({@code http://host/bucket/key}), which most
 *                        S3-compatible stores need
 * @param listener        hears retries and byte counts
 */
public record StoreOptions(int attempts, Duration backoffBase, Duration backoffMax, Duration timeout, int partBytes,
                           int concurrency, URI s3Endpoint, boolean s3PathStyle, StoreListener listener) {

    /** The smallest part S3 accepts (every part but the last). */
    public static final int MIN_PART_BYTES = 5 << 20;

    public StoreOptions {
        if (attempts < 1) {
            throw new IllegalArgumentException("attempts must be at least 1, got " + attempts);
        }
        if (partBytes < MIN_PART_BYTES) {
            throw new IllegalArgumentException("part size must be at least " + MIN_PART_BYTES + " bytes (S3's minimum), got " + partBytes);
        }
        if (concurrency < 1) {
            throw new IllegalArgumentException("concurrency must be at least 1, got " + concurrency);
        }
        Objects.requireNonNull(backoffBase, "backoffBase");
        Objects.requireNonNull(backoffMax, "backoffMax");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(listener, "listener");
    }

    /** Eight tries from 200 ms to 10 s apart, 30 s timeouts, 16 MiB parts, 8 in flight. */
    public static StoreOptions defaults() {
        return new StoreOptions(8, Duration.ofMillis(200), Duration.ofSeconds(10), Duration.ofSeconds(30), 16 << 20, 8,
                null, false, StoreListener.NONE);
    }

    public StoreOptions withAttempts(int n) {
        return new StoreOptions(n, backoffBase, backoffMax, timeout, partBytes, concurrency, s3Endpoint, s3PathStyle, listener);
    }

    public StoreOptions withBackoff(Duration base, Duration max) {
        return new StoreOptions(attempts, base, max, timeout, partBytes, concurrency, s3Endpoint, s3PathStyle, listener);
    }

    public StoreOptions withTimeout(Duration d) {
        return new StoreOptions(attempts, backoffBase, backoffMax, d, partBytes, concurrency, s3Endpoint, s3PathStyle, listener);
    }

    public StoreOptions withPartBytes(int n) {
        return new StoreOptions(attempts, backoffBase, backoffMax, timeout, n, concurrency, s3Endpoint, s3PathStyle, listener);
    }

    public StoreOptions withConcurrency(int n) {
        return new StoreOptions(attempts, backoffBase, backoffMax, timeout, partBytes, n, s3Endpoint, s3PathStyle, listener);
    }

    public StoreOptions withS3Endpoint(URI endpoint, boolean pathStyle) {
        return new StoreOptions(attempts, backoffBase, backoffMax, timeout, partBytes, concurrency, endpoint, pathStyle, listener);
    }

    public StoreOptions withListener(StoreListener l) {
        return new StoreOptions(attempts, backoffBase, backoffMax, timeout, partBytes, concurrency, s3Endpoint, s3PathStyle, l);
    }

    /**
     * The delay before try {@code attempt + 1} (attempt 1 is the first try): uniformly random up to
     * {@code min(backoffMax, backoffBase * 2^(attempt-1))}, so that many clients retrying one server
     * spread out instead of returning together.
     */
    public long backoffMillis(int attempt) {
        long cap = backoffBase.toMillis() << Math.min(attempt - 1, 20);
        cap = Math.min(Math.max(cap, 1), backoffMax.toMillis());
        return java.util.concurrent.ThreadLocalRandom.current().nextLong(cap / 2, cap + 1);
    }
}
