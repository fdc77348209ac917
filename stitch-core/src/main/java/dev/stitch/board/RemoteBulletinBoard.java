package dev.stitch.board;

import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoredDocument;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stitch-layout board on object storage or behind HTTP(S) (docs/protocol/board.md §7), read through a
 * verified local cache: the cache directory has the layout of a board, {@link #versionDirectory} points
 * into it, and a version's files appear there only once {@link #verifyArtifacts} fetched and verified
 * them, so appliers and engines read local paths and never an unverified byte. The pointer is polled
 * with conditional reads, so an idle reader costs the server a {@code 304}. Writable stores (S3) are
 * published to with conditional writes ({@link RemotePublisher}).
 */
public final class RemoteBulletinBoard implements PublishingBoard {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteBulletinBoard.class);
    /** A long fetch logs its progress this often. */
    private static final long PROGRESS_LOG_NANOS = 5_000_000_000L;

    private final BoardAddress address;
    private final BoardOptions options;
    private final RemoteBoardOptions remote;
    private final ObjectStore store;
    private final FetchStats stats;
    private final ArtifactFetcher fetcher;
    private final Path cache;
    private final Path versions;
    private final RemotePublisher publisher;
    private final AtomicLong appliedUpTo = new AtomicLong();
    private final Object pointerLock = new Object();
    private String pointerEtag;
    private LatestPointer pointer;
    /** The version of the newest pointer parsed, even one whose manifest had not arrived: files up to it are awaited, not missing. */
    private volatile long namedVersion;

    private RemoteBulletinBoard(BoardAddress address, BoardOptions options, RemoteBoardOptions remote, ObjectStore store,
                                FetchStats stats) {
        this.address = address;
        this.options = options;
        this.remote = remote;
        this.store = store;
        this.stats = stats;
        this.cache = remote.cacheDir().toAbsolutePath().normalize();
        this.versions = cache.resolve(FilesystemBulletinBoard.VERSIONS_DIR);
        this.fetcher = new ArtifactFetcher(store, remote.store().partBytes(), remote.store().concurrency(), stats);
        this.publisher = new RemotePublisher(this, store, options, remote);
    }

    /** Opens the board at {@code address} (a remote one), creating the cache directory. */
    public static RemoteBulletinBoard open(BoardAddress address, BoardOptions options, RemoteBoardOptions remote)
            throws IOException {
        if (!address.isRemote()) {
            throw new IllegalArgumentException(address + " is a directory; open it as a FilesystemBulletinBoard");
        }
        FetchStats stats = new FetchStats();
        StoreListener user = remote.store().listener();
        StoreOptions so = remote.store().withListener(user == StoreListener.NONE ? stats : new StoreListener() {
            @Override
            public void retry(String operation, String key, int attempt, long delayMillis, Throwable cause) {
                stats.retry(operation, key, attempt, delayMillis, cause);
                user.retry(operation, key, attempt, delayMillis, cause);
            }

            @Override
            public void received(long bytes) {
                stats.received(bytes);
                user.received(bytes);
            }

            @Override
            public void sent(long bytes) {
                stats.sent(bytes);
                user.sent(bytes);
            }
        });
        ObjectStore store = ObjectStores.open(address.uri(), so);
        Files.createDirectories(remote.cacheDir());
        return new RemoteBulletinBoard(address, options, remote.withStore(so), store, stats);
    }

    /** Creates the board's pointer at version 0 (with {@code runId} as a claim) unless one exists. */
    public static RemoteBulletinBoard create(BoardAddress address, String runId, BoardOptions options,
                                             RemoteBoardOptions remote) throws IOException {
        RemoteBulletinBoard board = open(address, options, remote);
        board.publisher.createPointer(runId);
        return board;
    }

    /** Where the board lives. */
    public BoardAddress address() {
        return address;
    }

    /** What this board fetched and published, for metrics. */
    public FetchStats stats() {
        return stats;
    }

    /** The store behind the board. */
    public ObjectStore store() {
        return store;
    }

    @Override
    public BoardOptions options() {
        return options;
    }

    /** The cache directory (laid out as a board). */
    @Override
    public Path root() {
        return cache;
    }

    @Override
    public BoardLayout layout() {
        return BoardLayout.STITCH;
    }

    @Override
    public void refresh() {
        // Every pointer read goes to the server; there is nothing to reload.
    }

    @Override
    public LatestPointer readLatest() throws IOException {
        synchronized (pointerLock) {
            StoredDocument d;
            try {
                d = store.read(LatestPointer.FILE_NAME, pointer == null ? null : pointerEtag,
                        FilesystemBulletinBoard.MAX_DOCUMENT_BYTES);
            } catch (NoSuchFileException e) {
                stats.polled(false);
                pointer = LatestPointer.EMPTY;
                pointerEtag = null;
                return pointer;
            }
            stats.polled(d.notModified());
            if (d.notModified()) {
                return pointer;
            }
            LatestPointer p = LatestPointer.parse(d.bytes(), LatestPointer.FILE_NAME);
            if (pointer != null && !Objects.equals(pointer.runId(), p.runId())) {
                forgetCachedVersions("the board's run changed from " + PointerMoves.describeRun(pointer.runId())
                        + " to " + PointerMoves.describeRun(p.runId()));
            }
            namedVersion = p.version();
            checkManifestChecksum(p);
            pointer = p;
            pointerEtag = d.etag();
            return p;
        }
    }

    /** The pointer with the entity tag it was read with, bypassing the poll cache (for writers). */
    StoredDocument readPointerDocument() throws IOException {
        try {
            return store.read(LatestPointer.FILE_NAME, null, FilesystemBulletinBoard.MAX_DOCUMENT_BYTES);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    private void checkManifestChecksum(LatestPointer p) throws IOException {
        if (p.manifestChecksum() == null || p.version() <= 0) {
            return;
        }
        byte[] manifest;
        try {
            manifest = manifestBytes(p.version());
            if (!matches(manifest, p.manifestChecksum())) {
                // A cached copy from an earlier run of this version number: fetch the one the pointer names.
                Files.deleteIfExists(manifestPath(p.version()));
                manifest = manifestBytes(p.version());
            }
        } catch (NoSuchFileException e) {
            // The pointer can replicate before the manifest it names (§7.6): the reader waits for it.
            throw new VersionNotArrivedException(relManifest(p.version()), p.version(), p.version(), address.toString());
        }
        if (!matches(manifest, p.manifestChecksum())) {
            throw new ProtocolException(LatestPointer.FILE_NAME + ": manifest_checksum " + p.manifestChecksum()
                    + " does not match " + relManifest(p.version()) + " on " + address);
        }
    }

    private static boolean matches(byte[] manifest, String checksum) {
        return FilesystemBulletinBoard.manifestChecksum(manifest).equalsIgnoreCase(checksum);
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
        String what = relManifest(version);
        byte[] bytes;
        try {
            bytes = manifestBytes(version);
        } catch (VersionNotArrivedException e) {
            throw e;
        } catch (NoSuchFileException e) {
            throw notArrivedOr(e, what, version);
        }
        return FilesystemBulletinBoard.parseManifest(version, bytes);
    }

    @Override
    public OptionalLong newestAnchorAtOrBelow(long version) throws IOException {
        LatestPointer p;
        synchronized (pointerLock) {
            p = pointer;
        }
        if (p == null) {
            p = readLatest();
        }
        return AnchorSearch.newestAtOrBelow(this, Math.min(version, p.version()));
    }

    /**
     * Fetches every selected artifact of {@code manifest} that the cache lacks, verifying each while it
     * streams, and checks the ones already cached (docs/protocol/board.md §1.3, §7.5).
     */
    @Override
    public VerificationReport verifyArtifacts(Manifest manifest, Predicate<Artifact> which, boolean requireChecksums)
            throws IOException {
        long version = manifest.version();
        Path dir = versionDirectory(version);
        long missingBytes = 0;
        int verified = 0;
        int unverified = 0;
        long bytes = 0;
        for (Artifact a : manifest.artifacts()) {
            if (a.knownKind() != null && which.test(a) && !isCached(dir, a)) {
                missingBytes += a.sizeBytes() == null ? 0 : a.sizeBytes();
            }
        }
        if (missingBytes > 0) {
            makeRoom(version, missingBytes);
        }
        FetchProgress progress = new FetchProgress(version, missingBytes);
        long t0 = System.nanoTime();
        boolean fetchedAny = false;
        for (Artifact a : manifest.artifacts()) {
            if (a.knownKind() == null || !which.test(a)) {
                continue;
            }
            Path file = ArtifactVerifier.resolveInside(dir, a.path());
            String rel = ArtifactVerifier.relative(cache, file);
            if (a.sizeBytes() == null || a.checksum() == null) {
                if (requireChecksums) {
                    throw new ArtifactVerificationException(rel, "has no " + (a.sizeBytes() == null ? "size_bytes" : "checksum")
                            + " in the manifest and checksums are required");
                }
            }
            long size;
            if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
                try {
                    size = ArtifactVerifier.checkFile(rel, file, a, Xxh3::hash128);
                } catch (ArtifactVerificationException e) {
                    // The cache's copy went bad on local disk: fetch it again rather than trust it.
                    LOG.warn("cached {} failed verification ({}); fetching it again", rel, e.getMessage());
                    Files.delete(file);
                    size = fetch(version, a, file, rel, progress);
                    fetchedAny = true;
                }
            } else {
                size = fetch(version, a, file, rel, progress);
                fetchedAny = true;
            }
            if (a.sizeBytes() == null || a.checksum() == null) {
                unverified++;
            } else {
                verified++;
                bytes += size;
            }
        }
        if (fetchedAny) {
            long nanos = System.nanoTime() - t0;
            stats.fetched(version, nanos);
            progress.finish(nanos);
        }
        return new VerificationReport(verified, bytes, unverified);
    }

    private long fetch(long version, Artifact a, Path file, String rel, FetchProgress progress) throws IOException {
        try {
            fetcher.fetch(key(version, a.path()), rel, a, file, progress::add);
        } catch (VersionNotArrivedException e) {
            throw e;
        } catch (NoSuchFileException e) {
            throw notArrivedOr(e, rel, version);
        }
        return Files.size(file);
    }

    /**
     * A missing file of a version at or below the newest pointer read has not arrived yet (§7.6); one above
     * it is simply not published. The board cannot tell a late file from a deleted one: readers decide from
     * whether they needed it (a version below a usable anchor is skipped either way).
     */
    private NoSuchFileException notArrivedOr(NoSuchFileException e, String file, long version) {
        long named = namedVersion;
        if (version > named) {
            return e;
        }
        VersionNotArrivedException late = new VersionNotArrivedException(file, version, named, address.toString());
        late.initCause(e);
        return late;
    }

    private boolean isCached(Path dir, Artifact a) {
        try {
            return Files.isRegularFile(ArtifactVerifier.resolveInside(dir, a.path()), LinkOption.NOFOLLOW_LINKS);
        } catch (ArtifactVerificationException e) {
            return false;
        }
    }

    /**
     * The reader no longer needs versions up to {@code version} (they are applied): the cache may evict
     * them when it needs room.
     */
    @Override
    public void appliedUpTo(long version) {
        appliedUpTo.accumulateAndGet(version, Math::max);
    }

    /** Evicts applied versions, oldest first, until {@code needed} more bytes fit under the limit. */
    private void makeRoom(long version, long needed) throws IOException {
        long used = CacheSpace.bytesUnder(versions);
        if (used + needed <= remote.cacheMaxBytes()) {
            return;
        }
        for (Path dir : CacheSpace.versionDirectories(versions)) {
            long v = WeightIdentity.parse(dir.getFileName().toString()).orElse(Long.MAX_VALUE);
            if (v > appliedUpTo.get() || v >= version) {
                break;
            }
            long freed = CacheSpace.bytesUnder(dir);
            FilesystemBulletinBoard.deleteTree(dir);
            used -= freed;
            LOG.info("evicted applied version {} from the cache ({} bytes)", v, freed);
            if (used + needed <= remote.cacheMaxBytes()) {
                return;
            }
        }
        throw new IOException("the cache " + cache + " holds " + used + " bytes of versions not yet applied and version "
                + version + " needs " + needed + " more, over its limit of " + remote.cacheMaxBytes()
                + " bytes (raise --cache-max-bytes)");
    }

    private void forgetCachedVersions(String why) throws IOException {
        LOG.info("{}: dropping the cached versions of {}", why, cache);
        for (Path dir : CacheSpace.versionDirectories(versions)) {
            FilesystemBulletinBoard.deleteTree(dir);
        }
        appliedUpTo.set(0);
    }

    /** The manifest's bytes: from the cache, else fetched and cached (manifests never change once published). */
    byte[] manifestBytes(long version) throws IOException {
        Path file = manifestPath(version);
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            return AtomicFiles.readSmallFile(file, FilesystemBulletinBoard.MAX_DOCUMENT_BYTES, LinkOption.NOFOLLOW_LINKS);
        }
        byte[] bytes = store.read(key(version, Manifest.FILE_NAME), null, FilesystemBulletinBoard.MAX_DOCUMENT_BYTES).bytes();
        Files.createDirectories(file.getParent());
        AtomicFiles.DURABLE.write(file, bytes);
        return bytes;
    }

    private Path manifestPath(long version) {
        return versionDirectory(version).resolve(Manifest.FILE_NAME);
    }

    static String key(long version, String relPath) {
        return FilesystemBulletinBoard.VERSIONS_DIR + "/" + WeightIdentity.format(version) + "/" + relPath;
    }

    private static String relManifest(long version) {
        return FilesystemBulletinBoard.relManifest(version);
    }

    // ---------------------------------------------------------------- writer side (§7.3)

    @Override
    public VersionPublication beginPublish(String runId, long version) throws IOException {
        return publisher.begin(runId, version);
    }

    @Override
    public LatestPointer claim(String runId) throws IOException {
        Objects.requireNonNull(runId, "a claim needs a run id");
        return publisher.claim(runId);
    }

    @Override
    public GcReport gc(int keepLast, long minAgeSeconds) throws IOException {
        return new RemoteGc(this, store, options).run(keepLast, minAgeSeconds);
    }

    @Override
    public List<String> leftovers() throws IOException {
        return new RemoteGc(this, store, options).leftovers();
    }

    @Override
    public void close() throws IOException {
        publisher.close();
        store.close();
    }

    @Override
    public String toString() {
        return "RemoteBulletinBoard[" + address + ", cache " + cache + "]";
    }

    /** Logs a long fetch's rate and time left every few seconds. */
    private static final class FetchProgress {
        private final long version;
        private final long total;
        private final long start = System.nanoTime();
        private final AtomicLong done = new AtomicLong();
        private volatile long lastLog = start;

        FetchProgress(long version, long total) {
            this.version = version;
            this.total = total;
        }

        void add(long bytes) {
            long d = done.addAndGet(bytes);
            long now = System.nanoTime();
            if (now - lastLog >= PROGRESS_LOG_NANOS) {
                lastLog = now;
                double s = (now - start) / 1e9;
                double rate = d / Math.max(s, 1e-9);
                LOG.info("fetching version {}: {} of {} MiB, {} MB/s, about {} s left", version, d >> 20, total >> 20,
                        String.format("%.1f", rate / 1e6), total > d ? String.format("%.0f", (total - d) / rate) : "0");
            }
        }

        void finish(long nanos) {
            if (nanos >= PROGRESS_LOG_NANOS) {
                LOG.info("fetched version {}: {} MiB in {} s", version, done.get() >> 20, String.format("%.1f", nanos / 1e9));
            }
        }
    }
}
