package dev.stitch.board;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.board.store.StoredDocument;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.WeightIdentity;
import java.io.Closeable;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishing on object storage (docs/protocol/board.md §7.3). The store has no rename and no lock,
 * so the filesystem's staged move becomes: claim the version ({@link PublishClaim}), clear what a
 * crashed publisher of it left, upload every artifact with {@code If-None-Match: *} as soon as it is
 * staged locally, create the manifest the same way, and advance {@code latest.json} with
 * {@code If-Match} on the entity tag read just before. Readers only follow the pointer, so nothing
 * is a version until that last write.
 */
final class RemotePublisher implements Closeable {
    static final String CLAIM_SUFFIX = ".claim";
    static final String CHECKSUM_KEY = "stitch-checksum";
    /** Files uploaded at once; each large file is itself a parallel multipart upload. */
    private static final int FILES_IN_FLIGHT = 2;
    /** Pointer compare-and-swap attempts before giving up on a busy board. */
    private static final int POINTER_ATTEMPTS = 8;

    private static final Logger LOG = LoggerFactory.getLogger(RemotePublisher.class);

    private final RemoteBulletinBoard board;
    private final ObjectStore store;
    private final BoardOptions options;
    private final RemoteBoardOptions remote;
    private final String owner;
    /** The upload threads of each publication not yet committed or discarded, stopped when the board closes. */
    private final Set<ExecutorService> openUploads = ConcurrentHashMap.newKeySet();
    private final Semaphore filesInFlight = new Semaphore(FILES_IN_FLIGHT);
    private final ScheduledExecutorService renewals = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "stitch-claim-renewal");
        t.setDaemon(true);
        return t;
    });

    RemotePublisher(RemoteBulletinBoard board, ObjectStore store, BoardOptions options, RemoteBoardOptions remote) {
        this.board = board;
        this.store = store;
        this.options = options;
        this.remote = remote;
        this.owner = options.writerId() + "/" + AtomicFiles.randomHex16();
    }

    /** Writes {@code (runId, 0)} unless the board has a pointer. */
    void createPointer(String runId) throws IOException {
        PointerMoves.checkWritableRunId(runId);
        requireWritable();
        if (board.readPointerDocument() != null) {
            return;
        }
        try {
            store.create(LatestPointer.FILE_NAME, new LatestPointer(runId, 0, now(), null).toBytes(), Map.of());
        } catch (PreconditionFailedException someoneElse) {
            LOG.debug("the pointer of {} was created concurrently", store.location());
        }
    }

    LatestPointer claim(String runId) throws IOException {
        PointerMoves.checkWritableRunId(runId);
        requireWritable();
        for (int attempt = 1; ; attempt++) {
            StoredDocument doc = board.readPointerDocument();
            LatestPointer current = parse(doc);
            if (PointerMoves.claim(current.runId(), current.version(), runId) != PointerMoves.Outcome.RESET) {
                return current;
            }
            LatestPointer next = new LatestPointer(runId, 0, now(), null);
            try {
                writePointer(doc, next);
                return next;
            } catch (PreconditionFailedException moved) {
                if (attempt >= POINTER_ATTEMPTS) {
                    throw new BoardLockedException("the pointer of " + store.location() + " kept changing during the claim of run '"
                            + runId + "'");
                }
            }
        }
    }

    VersionPublication begin(String runId, long version) throws IOException {
        PointerMoves.checkWritableRunId(runId);
        requireWritable();
        if (version < 1) {
            throw new IllegalArgumentException("published versions start at 1, got " + version);
        }
        LatestPointer p = parse(board.readPointerDocument());
        if (PointerMoves.publish(p.runId(), p.version(), runId, version) == PointerMoves.Outcome.CLAIM_THEN_ADVANCE) {
            claim(runId);
        }
        PublishClaim claim = PublishClaim.take(store, owner, runId, version, remote.claimStale(), options.lockTimeout(),
                renewals);
        boolean ok = false;
        try {
            // Another publisher may have finished this version while we waited for its claim.
            LatestPointer now = parse(board.readPointerDocument());
            PointerMoves.Outcome o = PointerMoves.publish(now.runId(), now.version(), runId, version);
            if (o != PointerMoves.Outcome.ADVANCE && o != PointerMoves.Outcome.CLAIM_THEN_ADVANCE) {
                throw new PointerConflictException("the pointer moved to version " + now.version() + " "
                        + PointerMoves.describeRun(now.runId()) + " while waiting for the claim on version " + version);
            }
            clearLeftovers(version);
            Path staging = remote.cacheDir().resolve("staging").resolve("." + WeightIdentity.format(version) + "."
                    + AtomicFiles.randomHex16() + FilesystemBulletinBoard.STAGING_SUFFIX);
            Files.createDirectories(staging);
            VersionPublication pub = new VersionPublication(options.files(), new Target(claim), runId, version, staging);
            ok = true;
            return pub;
        } finally {
            if (!ok) {
                claim.release();
            }
        }
    }

    /**
     * Deletes every object of {@code version} and aborts its incomplete uploads: with the claim held
     * and the pointer below the version, they are what a crashed publisher left (or another run's
     * version of that number, which the claim of this run retired).
     */
    private void clearLeftovers(long version) throws IOException {
        String prefix = RemoteBulletinBoard.key(version, "");
        List<ObjectInfo> left = store.list(prefix);
        for (ObjectInfo o : left) {
            store.delete(o.key());
        }
        List<ObjectStore.PendingUpload> pending = store.pendingUploads(prefix);
        for (ObjectStore.PendingUpload u : pending) {
            store.abort(u);
        }
        if (!left.isEmpty() || !pending.isEmpty()) {
            LOG.warn("removed {} objects and {} incomplete uploads of version {} that an earlier publish left",
                    left.size(), pending.size(), version);
        }
    }

    private void requireWritable() throws IOException {
        if (!store.writable()) {
            throw new IOException(store.location() + " is read-only: publish to the s3:// or file: board it serves");
        }
    }

    private void writePointer(StoredDocument current, LatestPointer next) throws IOException {
        if (current == null) {
            store.create(LatestPointer.FILE_NAME, next.toBytes(), Map.of());
        } else {
            store.replace(LatestPointer.FILE_NAME, next.toBytes(), current.etag());
        }
    }

    private static LatestPointer parse(StoredDocument doc) throws IOException {
        return doc == null ? LatestPointer.EMPTY : LatestPointer.parse(doc.bytes(), LatestPointer.FILE_NAME);
    }

    private double now() {
        return options.clock().millis() / 1000.0;
    }

    @Override
    public void close() {
        renewals.shutdownNow();
        openUploads.forEach(ExecutorService::shutdownNow);
    }

    /**
     * Aborts the incomplete multipart uploads of {@code version}, once it is published (nobody needs them
     * then) or while this publisher still holds its claim (they can only be its own: {@link #clearLeftovers}
     * removed everyone else's when the claim was taken). A multipart upload whose creation was retried
     * after a lost answer, or interrupted after the server had created it, leaves one whose id the store
     * never learned, so the upload could not abort it itself.
     */
    private void abortStrayUploads(long version) throws IOException {
        for (ObjectStore.PendingUpload u : store.pendingUploads(RemoteBulletinBoard.key(version, ""))) {
            store.abort(u);
        }
    }

    /** One publication's uploads, manifest and pointer move. */
    private final class Target implements VersionPublication.PublicationTarget {
        private final PublishClaim claim;
        /** This publication's own threads, so that a discard can stop its uploads and wait until they have. */
        private final ExecutorService uploads = Executors.newVirtualThreadPerTaskExecutor();
        private final List<Future<String>> uploaded = new ArrayList<>();

        Target(PublishClaim claim) {
            this.claim = claim;
            openUploads.add(uploads);
        }

        @Override
        public double now() {
            return RemotePublisher.this.now();
        }

        @Override
        public void staged(VersionPublication pub, Artifact artifact, Path file) {
            String key = RemoteBulletinBoard.key(pub.version(), artifact.path());
            Future<String> f = uploads.submit(() -> {
                filesInFlight.acquire();
                try {
                    upload(key, file, artifact);
                    return key;
                } finally {
                    filesInFlight.release();
                }
            });
            synchronized (uploaded) {
                uploaded.add(f);
            }
        }

        private void upload(String key, Path file, Artifact artifact) throws IOException {
            Map<String, String> meta = Map.of(PublishClaim.OWNER_KEY, owner, CHECKSUM_KEY, String.valueOf(artifact.checksum()));
            try {
                store.create(key, file, meta);
            } catch (PreconditionFailedException e) {
                // A retried request whose first try landed finds its own object; anything else is not ours.
                ObjectInfo there = store.stat(key).orElseThrow(() -> e);
                if (!owner.equals(there.metadata().get(PublishClaim.OWNER_KEY))
                        || !String.valueOf(artifact.checksum()).equals(there.metadata().get(CHECKSUM_KEY))) {
                    throw new PointerConflictException(key + " was written by another publisher ("
                            + there.metadata().getOrDefault(PublishClaim.OWNER_KEY, "unknown") + ") while this one held the claim");
                }
            }
        }

        @Override
        public Manifest commit(VersionPublication pub, Manifest manifest, byte[] bytes) throws IOException {
            awaitUploads();
            claim.ensureHeld();
            String manifestKey = RemoteBulletinBoard.key(pub.version(), Manifest.FILE_NAME);
            try {
                store.create(manifestKey, bytes, Map.of(PublishClaim.OWNER_KEY, owner));
            } catch (PreconditionFailedException e) {
                byte[] there = store.read(manifestKey, null, FilesystemBulletinBoard.MAX_DOCUMENT_BYTES).bytes();
                if (!Arrays.equals(there, bytes)) {
                    throw new PointerConflictException(manifestKey + " was written by another publisher");
                }
            }
            String checksum = FilesystemBulletinBoard.manifestChecksum(bytes);
            LatestPointer next = new LatestPointer(pub.runId(), pub.version(), now(), checksum);
            for (int attempt = 1; ; attempt++) {
                StoredDocument doc = board.readPointerDocument();
                LatestPointer current = parse(doc);
                if (current.version() == pub.version() && Objects.equals(current.runId(), pub.runId())
                        && checksum.equalsIgnoreCase(current.manifestChecksum())) {
                    break; // our own write, answered late
                }
                if (PointerMoves.publish(current.runId(), current.version(), pub.runId(), pub.version())
                        != PointerMoves.Outcome.ADVANCE) {
                    throw new PointerConflictException("latest is at version " + current.version() + " "
                            + PointerMoves.describeRun(current.runId()) + "; version " + pub.version() + " "
                            + PointerMoves.describeRun(pub.runId()) + " was overtaken before its pointer move");
                }
                claim.ensureHeld();
                try {
                    writePointer(doc, next);
                    break;
                } catch (PreconditionFailedException moved) {
                    if (attempt >= POINTER_ATTEMPTS) {
                        throw new BoardLockedException("the pointer of " + store.location() + " kept changing; version "
                                + pub.version() + " was not published");
                    }
                }
            }
            try {
                abortStrayUploads(pub.version());
            } catch (IOException e) {
                LOG.warn("version {} is published, but its stray incomplete uploads could not be listed or aborted (gc will): {}",
                        pub.version(), e.getMessage());
            }
            claim.release();
            closeUploads();
            FilesystemBulletinBoard.deleteTree(pub.stagingDirectory());
            LOG.debug("published version {} to {}", pub.version(), store.location());
            return manifest;
        }

        private void awaitUploads() throws IOException {
            List<Future<String>> all;
            synchronized (uploaded) {
                all = new ArrayList<>(uploaded);
            }
            for (Future<String> f : all) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    throw c instanceof IOException io ? io : new IOException("upload failed: " + c, c);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted waiting for uploads");
                }
            }
        }

        @Override
        public void discard(VersionPublication pub) throws IOException {
            synchronized (uploaded) {
                uploaded.clear();
            }
            // Uploads still running would land after the cleanup below, or after the claim is released, where the
            // next holder of the claim would take them for another publisher's: interrupt them and wait until they
            // have stopped (a multipart upload aborts itself on the way out).
            uploads.shutdownNow();
            closeUploads();
            // What landed is removed now if the store answers; otherwise the next claim holder or gc removes it.
            try {
                LatestPointer current = parse(board.readPointerDocument());
                // The pointer move may have landed though its answer was lost: then the version is published, keep it.
                boolean published = current.version() >= pub.version() && Objects.equals(current.runId(), pub.runId());
                if (!published) {
                    for (ObjectInfo o : store.list(RemoteBulletinBoard.key(pub.version(), ""))) {
                        if (owner.equals(store.stat(o.key()).map(i -> i.metadata().get(PublishClaim.OWNER_KEY)).orElse(null))) {
                            store.delete(o.key());
                        }
                    }
                }
                if (published || claim.held()) {
                    abortStrayUploads(pub.version());
                }
            } catch (IOException e) {
                LOG.warn("could not remove the uploaded files of abandoned version {} (the next publish or gc will): {}",
                        pub.version(), e.getMessage());
            }
            claim.release();
            FilesystemBulletinBoard.deleteTree(pub.stagingDirectory());
        }

        /** Waits for this publication's upload threads to end (they have finished, or were told to stop). */
        private void closeUploads() {
            openUploads.remove(uploads);
            uploads.close();
        }
    }
}
