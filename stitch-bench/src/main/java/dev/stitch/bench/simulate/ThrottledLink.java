package dev.stitch.bench.simulate;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The wide-area link between the trainer-side board and the rollout host: every file request pays
 * one round trip before its first byte, then its bytes flow through a shared token bucket.
 */
final class ThrottledLink {
    /** One block per token-bucket withdrawal: small enough for smooth pacing, large enough to keep syscalls cheap. */
    private static final int BLOCK = 64 * 1024;

    private final TokenBucket bucket;
    private final long rttNanos;

    /**
     * @param bytesPerSecond link rate in bytes per second
     * @param rttMillis      round-trip time added once per file request, non-negative
     */
    ThrottledLink(double bytesPerSecond, double rttMillis) {
        if (!(rttMillis >= 0) || Double.isInfinite(rttMillis)) {
            throw new IllegalArgumentException("RTT must be a non-negative number of milliseconds, got " + rttMillis);
        }
        // A burst of 10 ms of traffic (at least one block) keeps the bucket close to a constant-rate wire.
        this.bucket = new TokenBucket(bytesPerSecond, Math.max(BLOCK, (long) (bytesPerSecond / 100)));
        this.rttNanos = (long) (rttMillis * 1e6);
    }

    double bytesPerSecond() {
        return bucket.bytesPerSecond();
    }

    /** Copies {@code src} to {@code dst} (parents created, replaced if present) at the link's pace; returns the bytes moved. */
    long copy(Path src, Path dst) throws IOException, InterruptedException {
        TokenBucket.sleepNanos(rttNanos);
        Path parent = dst.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        long moved = 0;
        try (FileChannel in = FileChannel.open(src, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(dst, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                     StandardOpenOption.TRUNCATE_EXISTING)) {
            while (true) {
                buf.clear();
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                bucket.acquire(n);
                buf.flip();
                while (buf.hasRemaining()) {
                    out.write(buf);
                }
                moved += n;
            }
        }
        return moved;
    }
}
