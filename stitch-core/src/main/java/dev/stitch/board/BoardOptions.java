package dev.stitch.board;

import java.time.Duration;
import java.time.InstantSource;
import java.util.Objects;

/**
 * Tunables of a board (docs/protocol/board.md §2.1, 2.3, 2.5); {@link #defaults()} holds the spec's values.
 *
 * @param lockStale     a lock older than this may be broken ({@code lock_stale_s}, 120 s)
 * @param lockTimeout   how long to retry taking the lock before {@link BoardLockedException} ({@code lock_timeout_s}, 30 s)
 * @param orphanGrace   staging and orphan directories older than this are removed by gc ({@code orphan_grace_s}, 1 h)
 * @param archiveGrace  archived runs older than this are removed by gc ({@code archive_grace_s}, 24 h)
 * @param refreshHook   run before pointer reads and on {@link BulletinBoard#refresh()}
 * @param clock         the time source for {@code updated_at}, {@code created_at}, lock ages and gc ages
 * @param files         how files are written and synced (tests pass a spying instance)
 * @param writerId      the {@code owner} recorded in the lock file
 */
public record BoardOptions(Duration lockStale, Duration lockTimeout, Duration orphanGrace, Duration archiveGrace,
                           RefreshHook refreshHook, InstantSource clock, AtomicFiles files, String writerId) {

    public BoardOptions {
        Objects.requireNonNull(lockStale, "lockStale");
        Objects.requireNonNull(lockTimeout, "lockTimeout");
        Objects.requireNonNull(orphanGrace, "orphanGrace");
        Objects.requireNonNull(archiveGrace, "archiveGrace");
        Objects.requireNonNull(refreshHook, "refreshHook");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(files, "files");
        Objects.requireNonNull(writerId, "writerId");
    }

    /** The spec's defaults, the system clock and durable writes. */
    public static BoardOptions defaults() {
        return new BoardOptions(Duration.ofSeconds(120), Duration.ofSeconds(30), Duration.ofSeconds(3600),
                Duration.ofHours(24), RefreshHook.NONE, InstantSource.system(), AtomicFiles.DURABLE,
                "stitch-" + ProcessHandle.current().pid());
    }

    public BoardOptions withLockStale(Duration d) {
        return new BoardOptions(d, lockTimeout, orphanGrace, archiveGrace, refreshHook, clock, files, writerId);
    }

    public BoardOptions withLockTimeout(Duration d) {
        return new BoardOptions(lockStale, d, orphanGrace, archiveGrace, refreshHook, clock, files, writerId);
    }

    public BoardOptions withOrphanGrace(Duration d) {
        return new BoardOptions(lockStale, lockTimeout, d, archiveGrace, refreshHook, clock, files, writerId);
    }

    public BoardOptions withArchiveGrace(Duration d) {
        return new BoardOptions(lockStale, lockTimeout, orphanGrace, d, refreshHook, clock, files, writerId);
    }

    public BoardOptions withRefreshHook(RefreshHook h) {
        return new BoardOptions(lockStale, lockTimeout, orphanGrace, archiveGrace, h, clock, files, writerId);
    }

    public BoardOptions withClock(InstantSource c) {
        return new BoardOptions(lockStale, lockTimeout, orphanGrace, archiveGrace, refreshHook, c, files, writerId);
    }

    public BoardOptions withFiles(AtomicFiles f) {
        return new BoardOptions(lockStale, lockTimeout, orphanGrace, archiveGrace, refreshHook, clock, f, writerId);
    }

    public BoardOptions withWriterId(String id) {
        return new BoardOptions(lockStale, lockTimeout, orphanGrace, archiveGrace, refreshHook, clock, files, id);
    }
}
