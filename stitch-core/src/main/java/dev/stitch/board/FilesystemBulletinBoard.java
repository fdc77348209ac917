package dev.stitch.board;

import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stitch-layout board on a file system (docs/protocol/board.md §1-2): reads, and the writer side —
 * staged publishes with compare-and-advance of {@code latest.json} under the board lock, run claims,
 * retention and orphan handling. Safe for concurrent use by threads and by processes sharing the
 * directory.
 *
 * <pre>{@code
 * FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
 * LatestPointer p = board.readLatest();
 * try (VersionPublication pub = board.beginPublish(p.runId(), p.version() + 1)) {
 *     pub.writeArtifact("delta-00000.stdelta", ArtifactKind.TRANSITION, out -> out.write(bytes));
 *     Manifest m = pub.commit(ManifestFields.of("stitch_delta", "auto"));
 * }
 * }</pre>
 */
public final class FilesystemBulletinBoard implements PublishingBoard {
    /** Directory of the versions under the root. */
    public static final String VERSIONS_DIR = "versions";
    /** Directory of archived runs under the root. */
    public static final String ARCHIVE_DIR = "archive";
    /** Suffix of a publish in progress. */
    static final String STAGING_SUFFIX = ".staging";
    /** Suffix of a version directory moved aside because its publisher crashed before the pointer moved. */
    static final String ORPHAN_SUFFIX = ".orphan";
    /** Suffix of a latest version moved aside by {@link BoardRepair} because it could not be read or verified. */
    static final String BROKEN_SUFFIX = ".broken";
    /** Largest manifest or pointer file read; anything bigger is refused rather than loaded. */
    static final long MAX_DOCUMENT_BYTES = 64L << 20;


    private static final Logger LOG = LoggerFactory.getLogger(FilesystemBulletinBoard.class);

    private final Path root;
    private final Path versions;
    private final BoardOptions options;

    private FilesystemBulletinBoard(Path root, BoardOptions options) {
        this.root = root.toAbsolutePath().normalize();
        this.versions = this.root.resolve(VERSIONS_DIR);
        this.options = Objects.requireNonNull(options, "options");
    }

    /** Opens the board at {@code root} with default options; nothing is created. */
    public static FilesystemBulletinBoard open(Path root) {
        return open(root, BoardOptions.defaults());
    }

    /** Opens the board at {@code root}; nothing is created. */
    public static FilesystemBulletinBoard open(Path root, BoardOptions options) {
        return new FilesystemBulletinBoard(root, options);
    }

    /**
     * Creates a board ({@code versions/} and {@code latest.json} at version 0, with {@code runId} when
     * given, as a claim). An existing board is left unchanged.
     */
    public static FilesystemBulletinBoard create(Path root, String runId, BoardOptions options) throws IOException {
        PointerMoves.checkWritableRunId(runId);
        FilesystemBulletinBoard board = new FilesystemBulletinBoard(root, options);
        AtomicFiles files = options.files();
        files.createDirectories(board.versions);
        if (!Files.exists(board.latestPath())) {
            try (BoardLock lock = BoardLock.acquire(board.root, options)) {
                if (!Files.exists(board.latestPath())) {
                    board.writePointer(new LatestPointer(runId, 0, board.now(), null));
                }
            }
        }
        return board;
    }

    /** The options this board was opened with. */
    @Override
    public BoardOptions options() {
        return options;
    }

    @Override
    public Path root() {
        return root;
    }

    @Override
    public BoardLayout layout() {
        return BoardLayout.STITCH;
    }

    @Override
    public void refresh() throws IOException {
        options.refreshHook().refresh(root);
    }

    @Override
    public LatestPointer readLatest() throws IOException {
        refresh();
        return readPointerNoRefresh();
    }

    /**
     * Reads the pointer without checking its {@code manifest_checksum}, for diagnostics that want to
     * name the bad manifest rather than the pointer.
     */
    public LatestPointer readLatestUnchecked() throws IOException {
        refresh();
        byte[] bytes = readPointerBytes();
        return bytes == null ? LatestPointer.EMPTY : LatestPointer.parse(bytes, LatestPointer.FILE_NAME);
    }

    @Override
    public Path versionDirectory(long version) {
        return versions.resolve(WeightIdentity.format(version));
    }

    @Override
    public Manifest readManifest(long version) throws IOException {
        if (version < 1) {
            throw new IllegalArgumentException("version " + version + " has no manifest (the base is version 0)");
        }
        return parseManifest(version, readManifestBytes(version));
    }

    @Override
    public OptionalLong newestAnchorAtOrBelow(long version) throws IOException {
        return AnchorSearch.newestAtOrBelow(this, Math.min(version, readPointerNoRefresh().version()));
    }

    @Override
    public VerificationReport verifyArtifacts(Manifest manifest, Predicate<Artifact> which, boolean requireChecksums)
            throws IOException {
        return ArtifactVerifier.verify(root, versionDirectory(manifest.version()), manifest, which, requireChecksums);
    }

    // ---------------------------------------------------------------- writer side

    /**
     * Starts publishing {@code version} of run {@code runId} (null = a run-less board): checks the move
     * against the pointer (2.3 step 1), performing the implicit claim when {@code version == 1} starts
     * a new run, and creates the staging directory. The caller then writes artifacts and commits; a
     * publication that is closed without a commit removes its staging directory.
     *
     * @throws PointerRewindException   the version is already published in this run
     * @throws PointerSkipException     the version is more than one past latest
     * @throws PointerConflictException another run owns the board and {@code version > 1}
     */
    @Override
    public VersionPublication beginPublish(String runId, long version) throws IOException {
        PointerMoves.checkWritableRunId(runId);
        if (version < 1) {
            throw new IllegalArgumentException("published versions start at 1, got " + version);
        }
        LatestPointer p = readLatest();
        PointerMoves.Outcome outcome = PointerMoves.publish(p.runId(), p.version(), runId, version);
        if (outcome == PointerMoves.Outcome.CLAIM_THEN_ADVANCE) {
            claimInternal(runId);
        }
        options.files().createDirectories(versions);
        Path staging = versions.resolve("." + WeightIdentity.format(version) + "." + AtomicFiles.randomHex16() + STAGING_SUFFIX);
        Files.createDirectory(staging);
        return new VersionPublication(options.files(), publicationTarget, runId, version, staging);
    }

    /**
     * Starts run {@code runId} (2.4): the pointer becomes {@code (runId, 0)} (an idempotent no-op when
     * it already is), and every version directory of another run, or without a manifest, is moved to
     * {@code archive/<old run or "norun">/}.
     *
     * @throws PointerRewindException when {@code runId} already published versions
     */
    @Override
    public LatestPointer claim(String runId) throws IOException {
        Objects.requireNonNull(runId, "a claim needs a run id");
        PointerMoves.checkWritableRunId(runId);
        return claimInternal(runId);
    }

    private LatestPointer claimInternal(String runId) throws IOException {
        options.files().createDirectories(versions);
        try (BoardLock lock = BoardLock.acquire(root, options)) {
            LatestPointer current = readPointerNoRefresh();
            PointerMoves.Outcome outcome = PointerMoves.claim(current.runId(), current.version(), runId);
            LatestPointer next = current;
            if (outcome == PointerMoves.Outcome.RESET) {
                next = new LatestPointer(runId, 0, now(), null);
                writePointer(next);
            }
            // Archived under the lock so that a concurrent publisher of the new run cannot lose its version.
            archiveOtherRuns(runId);
            return next;
        }
    }

    /** The file-system side of a publication: the staged directory becomes the version by a rename. */
    private final VersionPublication.PublicationTarget publicationTarget = new VersionPublication.PublicationTarget() {
        @Override
        public double now() {
            return FilesystemBulletinBoard.this.now();
        }

        @Override
        public void staged(VersionPublication pub, Artifact artifact, Path file) {
        }

        @Override
        public Manifest commit(VersionPublication pub, Manifest manifest, byte[] bytes) throws IOException {
            options.files().write(pub.stagingDirectory().resolve(Manifest.FILE_NAME), bytes);
            options.files().fsyncDirectory(pub.stagingDirectory());
            return commitStaged(pub, manifest, bytes);
        }

        @Override
        public void discard(VersionPublication pub) throws IOException {
            deleteTree(pub.stagingDirectory());
        }
    };

    /** Step 5 of 2.3: under the lock, the staging directory becomes the version and the pointer advances. */
    private Manifest commitStaged(VersionPublication pub, Manifest manifest, byte[] manifestBytes) throws IOException {
        long version = manifest.version();
        Path finalDir = versionDirectory(version);
        try (BoardLock lock = BoardLock.acquire(root, options)) {
            LatestPointer current = readPointerNoRefresh();
            PointerMoves.Outcome outcome = PointerMoves.publish(current.runId(), current.version(), pub.runId(), version);
            if (outcome != PointerMoves.Outcome.ADVANCE) {
                // The run changed since beginPublish: our claim was overtaken, so this publish is fenced out.
                throw new PointerConflictException("latest is at version " + current.version() + " "
                        + PointerMoves.describeRun(current.runId()) + "; the claim of "
                        + PointerMoves.describeRun(pub.runId()) + " made for this publish was overtaken");
            }
            if (Files.exists(finalDir, LinkOption.NOFOLLOW_LINKS)) {
                Path orphan = versions.resolve("." + finalDir.getFileName() + "." + AtomicFiles.randomHex16() + ORPHAN_SUFFIX);
                LOG.warn("moving aside {} left by a crashed publisher (version {} is above latest {})", finalDir, version,
                        current.version());
                options.files().move(finalDir, orphan);
            }
            options.files().move(pub.stagingDirectory(), finalDir);
            options.files().fsyncDirectory(versions);
            String checksum = manifestChecksum(manifestBytes);
            writePointer(new LatestPointer(pub.runId(), version, now(), checksum));
            return manifest;
        }
    }

    /**
     * Deletes what a crashed publisher of {@code version} left (the version directory above latest,
     * its orphans and staging directories), under the lock. Refused for a published version.
     *
     * @return the removed entries, relative to the root
     */
    public List<String> discardOrphan(long version) throws IOException {
        List<String> removed = new ArrayList<>();
        List<Path> doomed = new ArrayList<>();
        try (BoardLock lock = BoardLock.acquire(root, options)) {
            LatestPointer current = readPointerNoRefresh();
            if (version <= current.version()) {
                throw new IOException("version " + version + " is published (latest is " + current.version()
                        + "); only versions above latest can be discarded");
            }
            Path dir = versionDirectory(version);
            String id = WeightIdentity.format(version);
            if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
                Path aside = versions.resolve("." + id + "." + AtomicFiles.randomHex16() + ORPHAN_SUFFIX);
                options.files().move(dir, aside);
                doomed.add(aside);
            }
            for (Path p : listVersionsDir()) {
                String name = p.getFileName().toString();
                if (name.startsWith("." + id + ".") && (name.endsWith(ORPHAN_SUFFIX) || name.endsWith(STAGING_SUFFIX))
                        && !doomed.contains(p)) {
                    doomed.add(p);
                }
            }
        }
        for (Path p : doomed) {
            deleteTree(p);
            removed.add(ArtifactVerifier.relative(root, p));
        }
        return removed;
    }

    /**
     * Entries that are not part of any published version: staging and orphan directories, version
     * directories above latest, stale lock files and temporaries, relative to the root.
     */
    @Override
    public List<String> leftovers() throws IOException {
        LatestPointer current = readPointerNoRefresh();
        List<String> out = new ArrayList<>();
        for (Path p : listVersionsDir()) {
            String name = p.getFileName().toString();
            OptionalLong v = WeightIdentity.parse(name);
            if (v.isPresent() ? v.getAsLong() > current.version() || v.getAsLong() == 0 : isLeftoverName(name)) {
                out.add(ArtifactVerifier.relative(root, p));
            }
        }
        for (Path p : listDir(root)) {
            if (isLeftoverName(p.getFileName().toString())) {
                out.add(ArtifactVerifier.relative(root, p));
            }
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }

    /**
     * Retention (2.5): keeps the newest anchor at or below latest and everything after it, and the
     * last {@code keepLast} versions; deletes older versions of this run once older than {@code minAgeSeconds},
     * other-run directories, archives older than the archive grace, and crash leftovers older than the
     * orphan grace: staging and orphan directories, temporaries (also inside published versions, unless
     * the manifest lists them), broken lock files and an abandoned break guard. A stale lock (2.1) is
     * broken and removed first. With no anchor no version is deleted ({@link FilesystemGc}).
     */
    @Override
    public GcReport gc(int keepLast, long minAgeSeconds) throws IOException {
        return new FilesystemGc(this).run(keepLast, minAgeSeconds);
    }

    // ---------------------------------------------------------------- internals

    /** The manifest of {@code v}, or null when it is missing or unreadable (gc and archiving decide around it). */
    Manifest readManifestQuietly(long v) {
        try {
            return readManifest(v);
        } catch (IOException e) {
            return null;
        }
    }

    Path latestPath() {
        return root.resolve(LatestPointer.FILE_NAME);
    }

    Path versionsPath() {
        return versions;
    }

    double now() {
        return options.clock().millis() / 1000.0;
    }

    /** The bytes of {@code latest.json}, or null when there is none; a link is refused (1.6). */
    byte[] readPointerBytes() throws IOException {
        try {
            return readBoardDocument(latestPath());
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    LatestPointer readPointerNoRefresh() throws IOException {
        byte[] bytes = readPointerBytes();
        if (bytes == null) {
            return LatestPointer.EMPTY;
        }
        LatestPointer p = LatestPointer.parse(bytes, LatestPointer.FILE_NAME);
        if (p.manifestChecksum() != null && p.version() > 0) {
            byte[] manifest;
            try {
                manifest = readManifestBytes(p.version());
            } catch (NoSuchFileException e) {
                throw new ProtocolException(LatestPointer.FILE_NAME + ": points at version " + p.version()
                        + " whose manifest is missing");
            }
            String actual = manifestChecksum(manifest);
            if (!actual.equalsIgnoreCase(p.manifestChecksum())) {
                throw new ProtocolException(LatestPointer.FILE_NAME + ": manifest_checksum " + p.manifestChecksum()
                        + " does not match " + relManifest(p.version()) + " (" + actual + ")");
            }
        }
        return p;
    }

    byte[] readManifestBytes(long version) throws IOException {
        return readBoardDocument(versionDirectory(version).resolve(Manifest.FILE_NAME));
    }

    /**
     * Reads a pointer or manifest below the root without following a link (1.6): the walk names the
     * link, and opening with NOFOLLOW_LINKS keeps a link swapped in after the walk from being followed.
     */
    private byte[] readBoardDocument(Path file) throws IOException {
        LinkFreePaths.requireNoLink(root, file);
        return AtomicFiles.readSmallFile(file, MAX_DOCUMENT_BYTES, LinkOption.NOFOLLOW_LINKS);
    }

    /** Parses {@code version}'s manifest and checks it names its own directory's version (1.2); every board kind reads it so. */
    static Manifest parseManifest(long version, byte[] bytes) throws ProtocolException {
        String what = relManifest(version);
        Manifest m = Manifest.parse(bytes, what);
        if (m.version() != version) {
            throw new ProtocolException(what + ": says version " + m.version() + ", its directory is version " + version);
        }
        return m;
    }

    /** The board-relative path (or object key) of {@code version}'s manifest. */
    static String relManifest(long version) {
        return VERSIONS_DIR + "/" + WeightIdentity.format(version) + "/" + Manifest.FILE_NAME;
    }

    /** The pointer's {@code manifest_checksum} of these manifest bytes (1.1). */
    static String manifestChecksum(byte[] manifestBytes) {
        return Artifact.XXH3_PREFIX + Xxh3.hash128(manifestBytes).hex();
    }

    void writePointer(LatestPointer p) throws IOException {
        options.files().write(latestPath(), p.toBytes());
    }




    private void archiveOtherRuns(String runId) throws IOException {
        Path archive = root.resolve(ARCHIVE_DIR);
        for (Path dir : listVersionsDir()) {
            OptionalLong v = WeightIdentity.parse(dir.getFileName().toString());
            if (v.isEmpty() || !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            Manifest m = readManifestQuietly(v.getAsLong());
            if (m != null && Objects.equals(m.runId(), runId)) {
                continue;
            }
            String oldRun = m == null || m.runId() == null ? "norun" : m.runId();
            Path target = archive.resolve(safeArchiveName(oldRun)).resolve(dir.getFileName());
            options.files().createDirectories(target.getParent());
            if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                target = target.resolveSibling(dir.getFileName() + "." + AtomicFiles.randomHex16());
            }
            options.files().move(dir, target);
            // The archive grace counts from the archiving, not from the publish.
            Files.setLastModifiedTime(target, FileTime.from(Instant.ofEpochMilli(options.clock().millis())));
            options.files().fsyncDirectory(target.getParent());
            LOG.info("archived {} of {} to {}", dir.getFileName(), m == null ? "an unknown run" : PointerMoves.describeRun(m.runId()),
                    ArtifactVerifier.relative(root, target));
        }
        options.files().fsyncDirectory(versions);
    }

    private static String safeArchiveName(String run) {
        String s = run.replace('/', '_').replace('\\', '_');
        if (s.equals(".") || s.equals("..") || s.isEmpty()) {
            return "run_" + s.replace('.', '_');
        }
        return s;
    }




    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            List<Path> children;
            try (Stream<Path> s = Files.list(p)) {
                children = s.toList();
            } catch (NoSuchFileException e) {
                return;
            }
            for (Path c : children) {
                deleteTree(c);
            }
        }
        Files.deleteIfExists(p);
    }

    List<Path> listVersionsDir() throws IOException {
        return listDir(versions);
    }

    static List<Path> listDir(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /** Names that belong to no version: staging, orphans, temporaries, broken locks. */
    static boolean isLeftoverName(String name) {
        return name.endsWith(STAGING_SUFFIX) || name.endsWith(ORPHAN_SUFFIX) || name.endsWith(BROKEN_SUFFIX)
                || (name.startsWith(".") && name.endsWith(RemotePublisher.CLAIM_SUFFIX))
                || (name.startsWith(".") && name.endsWith(".tmp"))
                || name.startsWith(BoardLock.STALE_PREFIX);
    }




    @Override
    public String toString() {
        return "FilesystemBulletinBoard[" + root + "]";
    }

    /**
     * Checks one artifact file against the size and digest its manifest entry gives (1.3), for
     * readers that verify files outside a board walk (the host applier).
     *
     * @param rel  the name used in the error message
     * @param xxh3 the xxh3-128 implementation to hash with
     * @throws ArtifactVerificationException naming {@code rel} and what is wrong
     */
    public static void verifyArtifactFile(String rel, Path file, Artifact artifact,
                                          java.util.function.Function<java.lang.foreign.MemorySegment, dev.stitch.hash.Hash128> xxh3)
            throws IOException {
        ArtifactVerifier.checkFile(rel, file, artifact, xxh3);
    }
}
