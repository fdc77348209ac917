package dev.stitch.board;

import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retention and crash leftovers of a board directory (docs/protocol/board.md §2.5): one gc pass of a
 * {@link FilesystemBulletinBoard}, deciding under the board lock and deleting after it.
 */
final class FilesystemGc {
    /** The name {@link AtomicFiles#temporarySibling} gives a file being written. */
    private static final Pattern TEMPORARY_NAME = Pattern.compile("\\..+\\.[0-9a-f]{16}\\.tmp");

    private static final Logger LOG = LoggerFactory.getLogger(FilesystemGc.class);

    private final FilesystemBulletinBoard board;
    private final Path root;
    private final BoardOptions options;

    FilesystemGc(FilesystemBulletinBoard board) {
        this.board = board;
        this.root = board.root();
        this.options = board.options();
    }

    GcReport run(int keepLast, long minAgeSeconds) throws IOException {
        if (keepLast < 0 || minAgeSeconds < 0) {
            throw new IllegalArgumentException("keep and min age are non-negative");
        }
        board.refresh();
        long nowMillis = options.clock().millis();
        long leftoverMillis = options.orphanGrace().toMillis();
        List<Long> deletedVersions = new ArrayList<>();
        List<Path> doomedVersions = new ArrayList<>();
        List<Path> doomedOther = new ArrayList<>();
        List<String> removed = new ArrayList<>();
        String brokenLock = BoardLock.breakIfStale(root, options);
        if (brokenLock != null) {
            LOG.warn("gc broke and removed the stale board lock of {}", brokenLock);
            removed.add(BoardLock.FILE_NAME);
        }
        long anchor;
        try (BoardLock lock = BoardLock.acquire(root, options)) {
            LatestPointer current = board.readPointerNoRefresh();
            long latest = current.version();
            anchor = newestAnchorOfRun(latest, current.runId());
            TreeMap<Long, Path> byVersion = new TreeMap<>();
            for (Path p : board.listVersionsDir()) {
                String name = p.getFileName().toString();
                OptionalLong v = WeightIdentity.parse(name);
                if (v.isPresent()) {
                    byVersion.put(v.getAsLong(), p);
                } else if (FilesystemBulletinBoard.isLeftoverName(name) && olderThan(p, options.orphanGrace().toMillis(), nowMillis)) {
                    doomedOther.add(p);
                }
            }
            for (var e : byVersion.entrySet()) {
                long v = e.getKey();
                Path dir = e.getValue();
                if (v > latest || v == 0) {
                    // Above latest under the lock: an orphan of a crashed publisher, not yet replaced.
                    if (olderThan(dir, options.orphanGrace().toMillis(), nowMillis)) {
                        doomedOther.add(dir);
                    }
                    continue;
                }
                Manifest m = board.readManifestQuietly(v);
                boolean otherRun = m != null && !Objects.equals(m.runId(), current.runId())
                        && m.runId() != null && current.runId() != null;
                if (otherRun) {
                    if (ageMillis(m, dir, nowMillis) >= minAgeSeconds * 1000) {
                        doomedVersions.add(dir);
                        deletedVersions.add(v);
                    }
                    continue;
                }
                boolean isProtected = v >= anchor || v > latest - keepLast;
                if (isProtected || anchor == 0) {
                    collectTemporaries(dir, m, leftoverMillis, nowMillis, doomedOther);
                    continue;
                }
                long age = m == null ? ageOfPath(dir, nowMillis) : ageMillis(m, dir, nowMillis);
                if (age >= minAgeSeconds * 1000) {
                    doomedVersions.add(dir);
                    deletedVersions.add(v);
                } else {
                    collectTemporaries(dir, m, leftoverMillis, nowMillis, doomedOther);
                }
            }
            for (Path p : FilesystemBulletinBoard.listDir(root)) {
                String name = p.getFileName().toString();
                if (FilesystemBulletinBoard.isLeftoverName(name) && olderThan(p, leftoverMillis, nowMillis)) {
                    doomedOther.add(p);
                } else if (name.equals(BoardLock.BREAK_GUARD)
                        && olderThan(p, Math.max(leftoverMillis, BoardLock.GUARD_ABANDONED_MS), nowMillis)) {
                    // A breaker that died mid-break left it; a live one holds it for milliseconds (2.1).
                    doomedOther.add(p);
                }
            }
            collectArchives(nowMillis, doomedOther);
        }
        for (Path dir : doomedVersions) {
            deleteVersionDirectory(dir);
        }
        for (Path p : doomedOther) {
            FilesystemBulletinBoard.deleteTree(p);
            removed.add(ArtifactVerifier.relative(root, p));
        }
        pruneEmptyArchiveRuns();
        return new GcReport(anchor, deletedVersions, removed);
    }

    private long newestAnchorOfRun(long latest, String run) throws IOException {
        for (long v = latest; v >= 1; v--) {
            Manifest m;
            try {
                m = board.readManifest(v);
            } catch (NoSuchFileException e) {
                return 0;
            } catch (ProtocolException e) {
                continue;
            }
            if (m.isAnchor() && (m.runId() == null || run == null || m.runId().equals(run))) {
                return v;
            }
        }
        return 0;
    }

    /**
     * Adds the temporaries ({@code .<name>.<16 hex>.tmp}, 2.1) a crashed writer left inside a published
     * version directory, unless its manifest lists them; a version whose manifest cannot be read is left alone.
     */
    private void collectTemporaries(Path dir, Manifest m, long graceMillis, long nowMillis, List<Path> doomed)
            throws IOException {
        if (m == null || !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Set<Path> listed = new HashSet<>();
        for (Artifact a : m.artifacts()) {
            listed.add(dir.resolve(a.path()).normalize());
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.toList()) {
                if (TEMPORARY_NAME.matcher(p.getFileName().toString()).matches() && !listed.contains(p.normalize())
                        && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) && olderThan(p, graceMillis, nowMillis)) {
                    doomed.add(p);
                }
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    private void collectArchives(long nowMillis, List<Path> doomed) throws IOException {
        Path archive = root.resolve(FilesystemBulletinBoard.ARCHIVE_DIR);
        for (Path runDir : FilesystemBulletinBoard.listDir(archive)) {
            if (!Files.isDirectory(runDir, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            for (Path versionDir : FilesystemBulletinBoard.listDir(runDir)) {
                if (olderThan(versionDir, options.archiveGrace().toMillis(), nowMillis)) {
                    doomed.add(versionDir);
                }
            }
        }
    }

    private void pruneEmptyArchiveRuns() throws IOException {
        Path archive = root.resolve(FilesystemBulletinBoard.ARCHIVE_DIR);
        for (Path runDir : FilesystemBulletinBoard.listDir(archive)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(runDir)) {
                if (!s.iterator().hasNext()) {
                    Files.deleteIfExists(runDir);
                }
            } catch (NoSuchFileException | java.nio.file.NotDirectoryException | java.nio.file.DirectoryNotEmptyException e) {
                // raced with another gc or a claim; nothing to prune
            }
        }
    }

    /** Removes a version: manifest first (so a half-deleted version reads as missing), then the rest. */
    private void deleteVersionDirectory(Path dir) throws IOException {
        if (Files.isSymbolicLink(dir)) {
            // Only the link belongs to the board; what it points at is never deleted (1.6).
            Files.deleteIfExists(dir);
            return;
        }
        Files.deleteIfExists(dir.resolve(Manifest.FILE_NAME));
        options.files().fsyncDirectory(dir);
        FilesystemBulletinBoard.deleteTree(dir);
    }

    private static boolean olderThan(Path p, long graceMillis, long nowMillis) {
        return ageOfPath(p, nowMillis) >= graceMillis;
    }

    private static long ageOfPath(Path p, long nowMillis) {
        try {
            return nowMillis - Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    private static long ageMillis(Manifest m, Path dir, long nowMillis) {
        if (m.createdAt() > 0) {
            return nowMillis - (long) (m.createdAt() * 1000);
        }
        return ageOfPath(dir, nowMillis);
    }
}
