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
 * private staging directory, then {@link #commit} writes the manifest and moves the directory into
 * place under the board lock, advancing the pointer. Until the commit nothing is visible to readers;
 * {@link #close()} without a commit removes the staging directory.
 *
 * <p>Artifact methods may be called from several threads (e.g. one per shard); {@code commit} must
 * follow all of them.
 */
public final class VersionPublication implements AutoCloseable {
    private final FilesystemBulletinBoard board;
    private final String runId;
    private final long version;
    private final Path staging;
    private final Map<String, Artifact> artifacts = new LinkedHashMap<>();
    private final Set<String> pending = new HashSet<>();
    private boolean finished;

    VersionPublication(FilesystemBulletinBoard board, String runId, long version, Path staging) {
        this.board = board;
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
        board.options().files().createDirectories(p.getParent());
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
            AtomicFiles.WrittenFile f = board.options().files().write(resolve(relPath), body);
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
                    transitionFiles, list, board.now(), fields.deltaEncoding(), fields.compressionFormat(),
                    fields.checksumFormat(), fields.transitionWeights(), runId, fields.baseModel(), null,
                    fields.metadata());
            byte[] bytes = manifest.toBytes();
            board.options().files().write(staging.resolve(Manifest.FILE_NAME), bytes);
            board.options().files().fsyncDirectory(staging);
            Manifest published = board.commitStaged(this, manifest, bytes);
            ok = true;
            return published;
        } finally {
            if (!ok) {
                FilesystemBulletinBoard.deleteTree(staging);
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
        FilesystemBulletinBoard.deleteTree(staging);
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

    private synchronized void record(Artifact a) {
        pending.remove(a.path());
        artifacts.put(a.path(), a);
    }
}
