package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/conformance.md case 16: stale and dead-owner locks are broken exactly once, live locks never. */
class BoardLockTest {
    @TempDir
    Path tmp;

    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-version")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        p.waitFor(30, TimeUnit.SECONDS);
        return p.pid();
    }

    private void writeLock(String host, long pid, double acquiredAt) throws IOException {
        Files.writeString(tmp.resolve(".stitch.lock"), "{\"acquired_at\": " + acquiredAt + ", \"host\": \"" + host
                + "\", \"owner\": \"ghost\", \"pid\": " + pid + ", \"token\": \"0000000000000000\"}\n", StandardCharsets.UTF_8);
    }

    private long staleFiles() throws IOException {
        try (Stream<Path> s = Files.list(tmp)) {
            return s.filter(p -> p.getFileName().toString().startsWith(BoardLock.STALE_PREFIX)).count();
        }
    }

    /** Many writers race for one stale lock: one breaks it, all eventually hold the lock one at a time. */
    private void raceFor(BoardOptions options) throws Exception {
        int writers = 8;
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < writers; i++) {
            futures.add(pool.submit(() -> {
                start.await();
                try (BoardLock lock = BoardLock.acquire(tmp, options)) {
                    int n = inside.incrementAndGet();
                    maxInside.accumulateAndGet(n, Math::max);
                    Thread.sleep(2);
                    inside.decrementAndGet();
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : futures) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(1, maxInside.get(), "mutual exclusion");
        assertEquals(1, staleFiles(), "the stale lock was broken exactly once");
        assertFalse(Files.exists(tmp.resolve(".stitch.lock")));
    }

    @Test
    void staleLockBrokenOnce() throws Exception {
        writeLock("some-other-host", 1, System.currentTimeMillis() / 1000.0 - 500);
        raceFor(BoardOptions.defaults());
    }

    @Test
    void deadOwnerOnThisHostBrokenOnce() throws Exception {
        writeLock(BoardLock.host(), deadPid(), System.currentTimeMillis() / 1000.0);
        raceFor(BoardOptions.defaults());
    }

    @Test
    void unreadableOldLockIsStaleByItsFileTime() throws Exception {
        Files.write(tmp.resolve(".stitch.lock"), new byte[0]);
        Files.setLastModifiedTime(tmp.resolve(".stitch.lock"),
                java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 600_000));
        raceFor(BoardOptions.defaults());
    }

    /**
     * A breaker that read the stale lock late must not rename aside the fresh lock another writer
     * took after breaking it; and breaks wait for the guard, unless its owner died long ago.
     */
    @Test
    void lateBreakerLeavesAFreshLockAloneAndBreaksAreGuarded() throws Exception {
        Path lock = tmp.resolve(".stitch.lock");
        byte[] staleSeen = new byte[0];
        try (BoardLock fresh = BoardLock.acquire(tmp, BoardOptions.defaults())) {
            byte[] held = Files.readAllBytes(lock);
            BoardLock.tryBreak(lock, staleSeen, "test: stale content read before the lock was retaken");
            assertArrayEquals(held, Files.readAllBytes(lock));
            assertEquals(0, staleFiles());
        }
        Files.write(lock, staleSeen);
        Path guard = tmp.resolve(BoardLock.BREAK_GUARD);
        Files.write(guard, new byte[0]);
        BoardLock.tryBreak(lock, staleSeen, "test: another breaker is at work");
        assertTrue(Files.exists(lock), "a live guard blocks the break");
        Files.setLastModifiedTime(guard, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 60_000));
        BoardLock.tryBreak(lock, staleSeen, "test: the guard's owner died");
        assertFalse(Files.exists(guard), "an abandoned guard is cleared");
        BoardLock.tryBreak(lock, staleSeen, "test: stale");
        assertFalse(Files.exists(lock));
        assertEquals(1, staleFiles());
        assertFalse(Files.exists(guard));
    }

    @Test
    void liveLocksAreRespected() throws Exception {
        // a fresh lock of a live process elsewhere, and a fresh lock of this (live) process
        writeLock("some-other-host", 1, System.currentTimeMillis() / 1000.0);
        BoardOptions quick = BoardOptions.defaults().withLockTimeout(Duration.ofMillis(200));
        assertTrue(assertThrowsLocked(quick));
        writeLock(BoardLock.host(), ProcessHandle.current().pid(), System.currentTimeMillis() / 1000.0);
        assertTrue(assertThrowsLocked(quick));
        assertEquals(0, staleFiles());
        // the same lock becomes breakable once older than lock_stale_s
        assertTrue(Files.exists(tmp.resolve(".stitch.lock")));
        try (BoardLock lock = BoardLock.acquire(tmp, quick.withLockStale(Duration.ZERO))) {
            assertEquals(1, staleFiles());
        }
    }

    private boolean assertThrowsLocked(BoardOptions options) {
        try (BoardLock lock = BoardLock.acquire(tmp, options)) {
            return false;
        } catch (BoardLockedException e) {
            return e.getMessage().contains("ghost") || e.getMessage().contains("locked");
        } catch (IOException e) {
            return false;
        }
    }
}
