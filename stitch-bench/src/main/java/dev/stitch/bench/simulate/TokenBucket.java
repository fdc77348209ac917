package dev.stitch.bench.simulate;

import java.util.concurrent.locks.LockSupport;

/**
 * A token bucket of bytes: refills at a fixed rate up to a burst capacity; a caller that takes more
 * than the bucket holds goes into debt and sleeps until the debt is repaid, so concurrent callers
 * share the rate fairly and the long-run throughput never exceeds it.
 */
public final class TokenBucket {
    private final double bytesPerNano;
    private final double capacity;
    private double tokens;
    private long lastRefill;

    /**
     * @param bytesPerSecond sustained rate, positive
     * @param burstBytes     largest amount taken without waiting after an idle period, positive
     */
    public TokenBucket(double bytesPerSecond, long burstBytes) {
        if (!(bytesPerSecond > 0) || Double.isInfinite(bytesPerSecond)) {
            throw new IllegalArgumentException("link rate must be a positive number of bytes per second, got " + bytesPerSecond);
        }
        if (burstBytes <= 0) {
            throw new IllegalArgumentException("burst must be positive, got " + burstBytes);
        }
        this.bytesPerNano = bytesPerSecond / 1e9;
        this.capacity = burstBytes;
        this.tokens = burstBytes;
        this.lastRefill = System.nanoTime();
    }

    public double bytesPerSecond() {
        return bytesPerNano * 1e9;
    }

    /** Takes {@code bytes} tokens, sleeping as long as the rate requires; returns the nanoseconds slept. */
    public long acquire(long bytes) throws InterruptedException {
        long waitNanos;
        synchronized (this) {
            long now = System.nanoTime();
            tokens = Math.min(capacity, tokens + (now - lastRefill) * bytesPerNano);
            lastRefill = now;
            tokens -= bytes;
            waitNanos = tokens >= 0 ? 0 : (long) Math.ceil(-tokens / bytesPerNano);
        }
        sleepNanos(waitNanos);
        return waitNanos;
    }

    static void sleepNanos(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        long left = nanos;
        while (left > 0) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            left = deadline - System.nanoTime();
        }
    }
}
