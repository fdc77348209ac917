package dev.stitch.board;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.protocol.CanonicalJson;
import dev.stitch.protocol.ProtocolJson;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The board writer lock {@code <root>/.stitch.lock} (docs/protocol/board.md §2.1): created
 * exclusively, held for the pointer critical section only, broken when stale or when its owner is a
 * dead process on this host.
 */
final class BoardLock implements AutoCloseable {
    static final String FILE_NAME = ".stitch.lock";
    static final String STALE_PREFIX = FILE_NAME + ".stale-";
    /** Held (created exclusively) by whoever is breaking the lock, so breaks never overlap. */
    static final String BREAK_GUARD = FILE_NAME + ".break";
    static final long GUARD_ABANDONED_MS = 10_000;

    private static final Logger LOG = LoggerFactory.getLogger(BoardLock.class);
    private static final String HOST = hostName();

    private final Path lock;
    private final String token;
    private boolean released;

    private BoardLock(Path lock, String token) {
        this.lock = lock;
        this.token = token;
    }

    /** This host's name as recorded in lock files. */
    static String host() {
        return HOST;
    }

    /** Takes the lock of {@code root}, retrying until {@code lockTimeout}; breaks stale and dead locks. */
    static BoardLock acquire(Path root, BoardOptions options) throws IOException {
        Path lock = root.resolve(FILE_NAME);
        String token = AtomicFiles.randomHex16();
        long deadline = System.nanoTime() + options.lockTimeout().toNanos();
        while (true) {
            byte[] content = content(options, token);
            if (tryCreate(lock, content)) {
                return new BoardLock(lock, token);
            }
            byte[] seen;
            try {
                seen = Files.readAllBytes(lock);
            } catch (NoSuchFileException gone) {
                continue;
            }
            String reason = breakReason(lock, seen, options);
            if (reason != null) {
                tryBreak(lock, seen, reason);
                continue;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new BoardLockedException("board " + root + " is locked by " + describe(seen) + "; gave up after "
                        + options.lockTimeout().toSeconds() + " s (the lock is broken automatically once older than "
                        + options.lockStale().toSeconds() + " s)");
            }
            try {
                TimeUnit.MILLISECONDS.sleep(5 + ThreadLocalRandom.current().nextInt(20));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while waiting for the board lock");
            }
        }
    }

    /**
     * Breaks the lock of {@code root} when it may be broken (stale, or its owner is a dead process on this
     * host) and deletes the broken lock file at once, for gc: nobody reads a lock that was renamed aside.
     *
     * @return whose lock was broken and why, or null when there is no lock or it must be respected
     */
    static String breakIfStale(Path root, BoardOptions options) throws IOException {
        Path lock = root.resolve(FILE_NAME);
        byte[] seen;
        try {
            seen = Files.readAllBytes(lock);
        } catch (NoSuchFileException e) {
            return null;
        }
        String reason = breakReason(lock, seen, options);
        if (reason == null) {
            return null;
        }
        Path aside = tryBreak(lock, seen, reason);
        if (aside == null) {
            return null;
        }
        Files.deleteIfExists(aside);
        return describe(seen) + ": " + reason;
    }

    /** Releases the lock if it is still ours. */
    @Override
    public void close() throws IOException {
        if (released) {
            return;
        }
        released = true;
        byte[] now;
        try {
            now = Files.readAllBytes(lock);
        } catch (NoSuchFileException e) {
            LOG.warn("board lock {} vanished while held (broken as stale by another writer?)", lock);
            return;
        }
        if (token.equals(tokenOf(now))) {
            Files.deleteIfExists(lock);
        } else {
            LOG.warn("board lock {} was taken over by {} while held; leaving it", lock, describe(now));
        }
    }

    private static byte[] content(BoardOptions options, String token) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("acquired_at", options.clock().millis() / 1000.0);
        o.put("host", HOST);
        o.put("owner", options.writerId());
        o.put("pid", ProcessHandle.current().pid());
        o.put("token", token);
        return CanonicalJson.toBytes(o);
    }

    /** Creates the lock with its full content in one step (hard link of a written temporary). */
    private static boolean tryCreate(Path lock, byte[] content) throws IOException {
        Path temp = AtomicFiles.temporarySibling(lock);
        try {
            Files.write(temp, content, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            try {
                Files.createLink(lock, temp);
                return true;
            } catch (FileAlreadyExistsException e) {
                return false;
            } catch (UnsupportedOperationException | java.nio.file.FileSystemException e) {
                // File systems without hard links: fall back to an exclusive create (content follows at once).
                try {
                    Files.write(lock, content, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                    return true;
                } catch (FileAlreadyExistsException exists) {
                    return false;
                }
            }
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    /** Why the lock content {@code seen} may be broken, or null when it must be respected. */
    private static String breakReason(Path lock, byte[] seen, BoardOptions options) throws IOException {
        double now = options.clock().millis() / 1000.0;
        JsonNode node = parseQuietly(seen);
        double acquiredAt;
        if (node != null && node.path("acquired_at").isNumber()) {
            acquiredAt = node.path("acquired_at").doubleValue();
        } else {
            try {
                acquiredAt = Files.getLastModifiedTime(lock).toMillis() / 1000.0;
            } catch (NoSuchFileException e) {
                return null;
            }
        }
        double age = now - acquiredAt;
        if (age > options.lockStale().toMillis() / 1000.0) {
            return String.format("stale (held for %.0f s)", age);
        }
        if (node != null && HOST.equals(node.path("host").asText(null)) && node.path("pid").canConvertToLong()) {
            long pid = node.path("pid").asLong();
            boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
            if (!alive) {
                return "its owner, pid " + pid + " on this host, is gone";
            }
        }
        return null;
    }

    /**
     * Renames the lock aside if it still holds {@code seen}; only one of several breakers can win.
     * Breakers take the guard file {@code .stitch.lock.break} first and re-read the lock under it:
     * without the guard, a breaker that read the stale lock could rename aside the fresh lock another
     * writer had just taken after breaking it, and two writers would hold the board at once.
     *
     * @return where the broken lock was renamed to, or null when this call did not break it
     */
    static Path tryBreak(Path lock, byte[] seen, String reason) throws IOException {
        Path guard = lock.resolveSibling(BREAK_GUARD);
        try {
            Files.write(guard, new byte[0], StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        } catch (FileAlreadyExistsException busy) {
            clearAbandonedGuard(guard);
            try {
                TimeUnit.MILLISECONDS.sleep(1 + ThreadLocalRandom.current().nextInt(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while waiting to break the board lock");
            }
            return null;
        }
        try {
            byte[] now;
            try {
                now = Files.readAllBytes(lock);
            } catch (NoSuchFileException gone) {
                return null;
            }
            if (!Arrays.equals(now, seen)) {
                // broken and retaken meanwhile: the caller looks at the new lock afresh
                return null;
            }
            Path aside = lock.resolveSibling(STALE_PREFIX + AtomicFiles.randomHex16());
            try {
                Files.move(lock, aside, StandardCopyOption.ATOMIC_MOVE);
            } catch (NoSuchFileException e) {
                return null;
            }
            byte[] moved = Files.readAllBytes(aside);
            if (!Arrays.equals(moved, seen)) {
                // The stale owner released and a writer retook the lock between our read and our rename: give it back.
                try {
                    Files.createLink(lock, aside);
                    Files.delete(aside);
                } catch (FileAlreadyExistsException e) {
                    LOG.warn("could not restore board lock {} taken by {}; a newer lock exists", lock, describe(moved));
                }
                return null;
            }
            LOG.warn("broke board lock {} held by {}: {}", lock, describe(seen), reason);
            return aside;
        } finally {
            Files.deleteIfExists(guard);
        }
    }

    /** A guard older than {@link #GUARD_ABANDONED_MS} belongs to a breaker that died mid-break (a break takes milliseconds). */
    private static void clearAbandonedGuard(Path guard) throws IOException {
        try {
            long age = System.currentTimeMillis() - Files.getLastModifiedTime(guard).toMillis();
            if (age > GUARD_ABANDONED_MS) {
                LOG.warn("removing abandoned board lock guard {} ({} ms old)", guard, age);
                Files.deleteIfExists(guard);
            }
        } catch (NoSuchFileException gone) {
            // released meanwhile
        }
    }

    private static JsonNode parseQuietly(byte[] bytes) {
        try {
            JsonNode n = ProtocolJson.MAPPER.readTree(bytes);
            return n != null && n.isObject() ? n : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static String tokenOf(byte[] bytes) {
        JsonNode n = parseQuietly(bytes);
        return n == null ? null : n.path("token").asText(null);
    }

    private static String describe(byte[] bytes) {
        JsonNode n = parseQuietly(bytes);
        if (n == null) {
            return "an unreadable lock file";
        }
        return "'" + n.path("owner").asText("?") + "' (host " + n.path("host").asText("?") + ", pid "
                + n.path("pid").asText("?") + ")";
    }

    private static String hostName() {
        String env = System.getenv("HOSTNAME");
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return env == null || env.isBlank() ? "localhost" : env;
        }
    }
}
