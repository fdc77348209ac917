package dev.stitch.bench.simulate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenBucketTest {

    @Test
    void longRunRateNeverExceedsTheLinkRate() throws Exception {
        // 4 MB/s with a 64 KiB burst: 1 MiB must take at least (1 MiB - burst) / rate.
        TokenBucket bucket = new TokenBucket(4e6, 64 * 1024);
        long t0 = System.nanoTime();
        for (int i = 0; i < 16; i++) {
            bucket.acquire(64 * 1024);
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        double floor = (16 * 64 * 1024 - 64 * 1024) / 4e6;
        assertTrue(seconds >= floor * 0.98, "1 MiB at 4 MB/s took only " + seconds + " s");
        assertTrue(seconds < floor + 2.0, "pacing is far too slow: " + seconds + " s");
    }

    @Test
    void rejectsNonsenseRates() {
        assertThrows(IllegalArgumentException.class, () -> new TokenBucket(0, 1));
        assertThrows(IllegalArgumentException.class, () -> new TokenBucket(Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> new TokenBucket(1e6, 0));
        assertThrows(IllegalArgumentException.class, () -> new ThrottledLink(1e6, -1));
    }

    @Test
    void linkCopiesBytesExactlyAndPaysTheRoundTrip(@TempDir Path dir) throws Exception {
        byte[] data = new byte[300_000];
        new Random(7).nextBytes(data);
        Path src = Files.write(dir.resolve("a.bin"), data);
        ThrottledLink link = new ThrottledLink(50e6, 40);
        long t0 = System.nanoTime();
        long moved = link.copy(src, dir.resolve("sub/b.bin"));
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertEquals(data.length, moved);
        assertArrayEquals(data, Files.readAllBytes(dir.resolve("sub/b.bin")));
        assertTrue(seconds >= 0.040, "RTT not paid: " + seconds + " s");
    }
}
