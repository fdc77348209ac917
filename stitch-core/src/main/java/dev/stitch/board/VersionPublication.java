package dev.stitch.board;

import dev.stitch.hash.Hash128;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One version being published (docs/protocol/board.md §2.3 steps 2-5): artifacts are written into a
 * private local staging directory, then {@link #commit} publishes the manifest and advances the
 * pointer: on a file system by moving the directory into place under the board lock, on object
 * storage by uploading each artifact as it is recorded and creating the manifest and pointer with
 * conditional writes (§7.3). Until the commit nothing is visible to readers; {@link #close()}
 * without a commit removes the staging directory and whatever was uploaded.
 *
 * <p>Artifact methods may be called from several threads (e.g. one per shard); {@code commit} must
 * follow all of them.
 */
public final class VersionPublication implements AutoCloseable {
    private final AtomicFiles files;
    private final PublicationTarget target;
    private final String runId;
    private final long version;
    private final Path staging;
    private final Map<String, Artifact> artifacts = new LinkedHashMap<>();
    private final Set<String> pending = new HashSet<>();
    private boolean finished;

    VersionPublication(AtomicFiles files, PublicationTarget target, String runId, long version, Path staging) {
        this.files = files;
        this.target = target;
        this.runId = runId;
        this.version = version;
        this.staging = staging;
    }

    /** The version being published. */
    public long version() {
        return version;
    }

    /** The run it belongs to, or null for a run-less board. */
    public String runId() {
        return runId;
    }

    /**
     * The staging directory. Files the caller writes here itself must be written atomically (for
     * example with {@link AtomicFiles}) and then registered with {@code addArtifact}.
     */
    public Path stagingDirectory() {
        return staging;
    }

    /** The staging path of {@code relPath}, after checking it is a safe artifact path; parent directories are created. */
    public Path resolve(String relPath) throws IOException {
        String bad = Artifact.pathProblem(relPath);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        if (relPath.equals(Manifest.FILE_NAME)) {
            throw new IllegalArgumentException("'" + Manifest.FILE_NAME + "' is written by the board, not as an artifact");
        }
        Path p = staging.resolve(relPath);
        files.createDirectories(p.getParent());
        return p;
    }

    /**
     * Writes an artifact atomically into the staging directory (temporary, fsync, rename, directory
     * fsync) and records it with the size and xxh3-128 computed while writing.
     */
    public Artifact writeArtifact(String relPath, ArtifactKind kind, ArtifactWriter body) throws IOException {
        reserve(relPath);
        boolean ok = false;
        try {
            AtomicFiles.WrittenFile f = files.write(resolve(relPath), body);
            Artifact a = Artifact.of(kind, relPath, f.sizeBytes(), f.xxh3());
            record(a);
            ok = true;
            return a;
        } finally {
            if (!ok) {
                release(relPath);
            }
        }
    }

    /** Records a file the caller already wrote (atomically) in the staging directory; reads it once to hash it. */
    public Artifact addArtifact(String relPath, ArtifactKind kind) throws IOException {
        reserve(relPath);
        boolean ok = false;
        try {
            Path file = existingFile(relPath);
            Artifact a = Artifact.of(kind, relPath, Files.size(file), ArtifactVerifier.xxh3(file));
            record(a);
            ok = true;
            return a;
        } finally {
            if (!ok) {
                release(relPath);
            }
        }
    }

    /**
     * Records a file the caller already wrote in the staging directory with the size and digest it
     * computed while writing (so multi-GB files are not read again); the size is checked against the file.
     */
    public Artifact addArtifact(String relPath, ArtifactKind kind, long sizeBytes, Hash128 xxh3) throws IOException {
        reserve(relPath);
        boolean ok = false;
        try {
            Path file = existingFile(relPath);
            long actual = Files.size(file);
            if (actual != sizeBytes) {
                throw new IOException("artifact " + relPath + " is " + actual + " bytes on disk, the writer reported " + sizeBytes);
            }
            Artifact a = Artifact.of(kind, relPath, sizeBytes, xxh3);
            record(a);
            ok = true;
            return a;
        } finally {
            if (!ok) {
                release(relPath);
            }
        }
    }

    /** The artifacts recorded so far, in the order they were recorded. */
    public synchronized List<Artifact> artifacts() {
        return List.copyOf(artifacts.values());
    }

    /**
     * Writes {@code manifest.json} (transition files = the transition artifacts in recording order),
     * then takes the board lock, re-checks the pointer, moves the version into place and advances
     * {@code latest.json}. On any failure the staging directory is removed and the pointer is
     * untouched.
     *
     * @return the published manifest
     * @throws PointerMoveException when another publisher or run got there first
     */
    public Manifest commit(ManifestFields fields) throws IOException {
        List<Artifact> list;
        synchronized (this) {
            if (finished) {
                throw new IllegalStateException("version " + version + " was already committed or aborted");
            }
            if (!pending.isEmpty()) {
                throw new IllegalStateException("artifacts still being written: " + pending);
            }
            finished = true;
            list = new ArrayList<>(artifacts.values());
        }
        boolean ok = false;
        try {
            List<String> transitionFiles = new ArrayList<>();
            for (Artifact a : list) {
                if (a.is(ArtifactKind.TRANSITION)) {
                    transitionFiles.add(a.path());
                }
            }
            Manifest manifest = new Manifest(version, version - 1, fields.backend(), fields.loadFormat(),
                    transitionFiles, list, target.now(), fields.deltaEncoding(), fields.compressionFormat(),
                    fields.checksumFormat(), fields.transitionWeights(), runId, fields.baseModel(), null,
                    fields.metadata());
            byte[] bytes = manifest.toBytes();
            Manifest published = target.commit(this, manifest, bytes);
            ok = true;
            return published;
        } finally {
            if (!ok) {
                target.discard(this);
            }
        }
    }

    /** Abandons the publish: removes the staging directory. Idempotent; a no-op after a commit. */
    public void abort() throws IOException {
        synchronized (this) {
            if (finished) {
                return;
            }
            finished = true;
        }
        target.discard(this);
    }

    /** Same as {@link #abort()}. */
    @Override
    public void close() throws IOException {
        abort();
    }

    private Path existingFile(String relPath) throws IOException {
        Path file = resolve(relPath);
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("artifact " + relPath + " is not a regular file in " + staging);
        }
        return file;
    }

    private synchronized void reserve(String relPath) {
        if (finished) {
            throw new IllegalStateException("version " + version + " was already committed or aborted");
        }
        if (artifacts.containsKey(relPath) || !pending.add(relPath)) {
            throw new IllegalArgumentException("artifact " + relPath + " is already part of version " + version);
        }
    }

    private synchronized void release(String relPath) {
        pending.remove(relPath);
    }

    private void record(Artifact a) throws IOException {
        synchronized (this) {
            pending.remove(a.path());
            artifacts.put(a.path(), a);
        }
        target.staged(this, a, staging.resolve(a.path()));
    }

    /**
     * Where a publication goes: a file-system board or a remote one. Each sees the artifacts as they
     * are recorded (a remote board starts uploading them while the next ones are written), then the
     * commit or the discard.
     */
    interface PublicationTarget {
        /** The time recorded as the manifest's {@code created_at}, in seconds. */
        double now();

        /** {@code artifact} is complete at {@code file} in the staging directory. */
        void staged(VersionPublication pub, Artifact artifact, Path file) throws IOException;

        /** Publishes {@code manifest} (whose canonical bytes are {@code bytes}) and advances the pointer. */
        Manifest commit(VersionPublication pub, Manifest manifest, byte[] bytes) throws IOException;

        /** Removes the staging directory and anything published of the version so far; idempotent. */
        void discard(VersionPublication pub) throws IOException;
    }
}
