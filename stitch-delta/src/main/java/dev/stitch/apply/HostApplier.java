package dev.stitch.apply;

import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.AtomicFiles;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.digest.Digests;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.VersionFiles;
import dev.stitch.format.VersionPatches;
import dev.stitch.kernels.Kernels;
import dev.stitch.memory.MappedRegions;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.Manifest;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsFormatException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Brings a local Hugging Face checkpoint directory from its recorded version to a target along a
 * chain of versions of any backend (docs/formats/sparse-delta.md §2.10, docs/formats/disk-delta.md §3.4, 3.5, docs/formats/stitch-delta.md §4, docs/formats/anchors-and-fallback.md §5; docs/protocol/sync-and-engines.md §7.3).
 *
 * <p>For each version every file is verified (size and digest against the manifest), parsed and
 * decoded before the first byte of the local checkpoint is written. Tensors with an xxh3-128 digest
 * are then patched and hashed in one pass over memory-mapped shards, keeping what they overwrite
 * (docs/formats/disk-delta.md §3.4 step 5); if any digest differs, every one of them is put back, so a refused
 * version leaves the weight files byte-for-byte unchanged. Other digests are checked by a hashing
 * pass before writing. Tensors run in parallel, bracketed by the {@code applying} crash marker in
 * the state file. The exclusive lock {@code .weight_sync/lock} is held from {@link #open} to
 * {@link #close}.
 */
public final class HostApplier implements AutoCloseable {

    /** Directory of the state file and the lock inside the local checkpoint. */
    public static final String STATE_DIR = HostStateFile.DIRECTORY;

    /** Sorts malformed-stream findings before digest mismatches in the verify pass's report. */
    private static final String MALFORMED_MARK = "\u0000";

    private final Path local;
    private final ForkJoinPool pool;
    private final HostStateFile stateFile;
    private final FileChannel lockChannel;
    private final FileLock lock;
    private HostState state;

    private HostApplier(Path local, int threads, FileChannel lockChannel, FileLock lock, HostState state) {
        this.local = local;
        this.pool = new ForkJoinPool(threads);
        this.stateFile = HostStateFile.of(local);
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.state = state;
    }

    /**
     * Opens a local checkpoint directory and takes its exclusive lock (fails if another holder has it);
     * decoding, verifying and writing use one thread per available processor.
     */
    public static HostApplier open(Path local) throws IOException {
        return open(local, Runtime.getRuntime().availableProcessors());
    }

    /**
     * As {@link #open(Path)}, doing all decode, verify and write work on at most {@code threads}
     * threads (1 measures the single-threaded figures of docs/performance-targets.md §7.4).
     */
    public static HostApplier open(Path local, int threads) throws IOException {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        if (!Files.isDirectory(local)) {
            throw new IOException(local + " is not a directory");
        }
        Path dir = local.resolve(STATE_DIR);
        Files.createDirectories(dir);
        FileChannel ch = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            ch.close();
            throw new IOException(dir.resolve("lock") + " is held by another process or applier");
        }
        try {
            return new HostApplier(local, threads, ch, lock, HostStateFile.of(local).read());
        } catch (IOException | RuntimeException e) {
            lock.release();
            ch.close();
            throw e;
        }
    }

    public Path directory() {
        return local;
    }

    /** The current state (version 0 when the checkpoint has no state file). */
    public HostState state() {
        return state;
    }

    /** The version the local files hold. */
    public long version() {
        return state.version();
    }

    /**
     * Applies {@code chain} in order. Versions at or below the local version are skipped; each other
     * step must build on the local version (or be an anchor).
     *
     * @throws RefusedVersionException when a version is refused; versions before it stay applied and
     *                                 the refused one changed nothing
     */
    public ApplyResult apply(List<VersionStep> chain, ApplyProgress progress) throws IOException, RefusedVersionException {
        long from = state.version();
        List<Long> applied = new ArrayList<>();
        List<Long> skipped = new ArrayList<>();
        List<String> unknown = new ArrayList<>();
        long written = 0;
        for (VersionStep step : chain) {
            String dirty = state.dirtyReason();
            DeltaFormat format = step.loadAnchor() ? DeltaFormat.FULL : DeltaFormat.byId(step.backend()).orElse(null);
            if (format != null && !format.hasTransition()) {
                if (!step.loadAnchor() && state.version() >= step.version() && dirty == null && sameRun(step)) {
                    skipped.add(step.version());
                    continue;
                }
                written += loadAnchor(step, progress);
                applied.add(step.version());
                continue;
            }
            if (dirty != null) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.DIRTY,
                    "the local checkpoint is dirty (" + dirty + "); rebuild it from the base or an anchor");
            }
            if (!sameRun(step)) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.DIRTY,
                    "the local checkpoint holds run " + state.runId() + ", the chain is of run " + step.runId() + "; rebuild it");
            }
            if (state.version() >= step.version()) {
                skipped.add(step.version());
                continue;
            }
            if (state.version() != step.baseVersion()) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.WRONG_BASE,
                    "out-of-order delta: local at " + state.version() + ", delta builds on " + step.baseVersion());
            }
            if (format == null) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.UNSUPPORTED,
                    "backend '" + step.backend() + "' cannot be applied host-side");
            }
            long[] w = new long[1];
            unknown.addAll(inPool(() -> applyDelta(step, format, progress, w)));
            written += w[0];
            applied.add(step.version());
        }
        return new ApplyResult(from, state.version(), applied, skipped, written, unknown);
    }

    private interface PoolWork<T> {
        T run() throws IOException, RefusedVersionException;
    }

    /** Runs {@code work} on this applier's pool, so the parallel streams inside it use at most its threads. */
    private <T> T inPool(PoolWork<T> work) throws IOException, RefusedVersionException {
        try {
            return pool.submit(() -> {
                try {
                    return work.run();
                } catch (IOException | RefusedVersionException e) {
                    throw new CompletionException(e);
                }
            }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while applying", e);
        } catch (ExecutionException e) {
            // the fork/join pool may wrap a task's exception once more when it crosses threads
            Throwable c = e.getCause();
            while (c instanceof CompletionException && c.getCause() != null) {
                c = c.getCause();
            }
            switch (c) {
                case IOException io -> throw io;
                case RefusedVersionException r -> throw r;
                case RuntimeException r -> throw r;
                case Error err -> throw err;
                default -> throw new IOException(c);
            }
        }
    }

    private boolean sameRun(VersionStep step) {
        return state.runId() == null || step.runId() == null || state.runId().equals(step.runId()) || state.version() == 0;
    }

    // ---- delta versions ------------------------------------------------------------------------

    private List<String> applyDelta(VersionStep step, DeltaFormat format, ApplyProgress progress, long[] written)
            throws IOException, RefusedVersionException {
        long v = step.version();
        List<String> used = new ArrayList<>(step.transitionFiles());
        for (String meta : format.metaFiles()) {
            // Read whether or not the manifest lists it (1.4), so it is checked for presence and links like a listed file.
            used.add(meta);
        }
        verifyArtifacts(step, used, progress);
        List<String> unknown = new ArrayList<>();
        try (Checkpoint ckpt = Checkpoint.open(local, true)) {
            Map<String, List<TensorPatch>> byName;
            try {
                VersionPatches patches = format.readPatches(
                    new VersionFiles(v, step.baseVersion(), step.directory(), step.transitionFiles()), ckpt);
                byName = patches.byName();
                unknown.addAll(patches.unknownTensors());
            } catch (DeltaFormatException | SafetensorsFormatException e) {
                throw new RefusedVersionException(v, RefusedVersionException.Reason.MALFORMED, e.getMessage(), e);
            }
            verifyDigests(v, ckpt, byName, progress);
            if (byName.isEmpty()) {
                state = state.withVersion(v, step.runId() != null ? step.runId() : state.runId());
                writeState();
                return unknown;
            }
            HostState before = state;
            state = state.withApplying(v);
            writeState();
            long total = byName.values().stream().flatMap(List::stream).mapToLong(TensorPatch::byteLength).sum();
            AtomicLong bytes = new AtomicLong();
            // First the patches checked while writing (undoable); only once all of them match are the
            // rest written, which were checked before (or carry no digest) and cannot be undone.
            // the undo logs live only as long as this version's apply (a few % of the model's bytes)
            try (Arena undoMemory = Arena.ofShared()) {
                List<CheckedWrite> checked = byName.values().stream().flatMap(List::stream).filter(TensorPatch::checkedWhileWriting)
                    .toList().parallelStream().map(p -> {
                        CheckedWrite w = CheckedWrite.of(p, ckpt.tensor(p.name()), undoMemory);
                        progress.report(v, "write", bytes.addAndGet(p.byteLength()), total);
                        return w;
                    }).toList();
                List<String> bad = checked.stream().map(CheckedWrite::problem).filter(x -> x != null).sorted().toList();
                if (!bad.isEmpty()) {
                    checked.parallelStream().forEach(CheckedWrite::undo);
                    state = before;
                    writeState();
                    String first = bad.get(0);
                    boolean malformed = first.startsWith(MALFORMED_MARK);
                    throw new RefusedVersionException(v, malformed ? RefusedVersionException.Reason.MALFORMED : RefusedVersionException.Reason.CHECKSUM,
                        (malformed ? first.substring(MALFORMED_MARK.length()) : first) + (bad.size() > 1 ? " (and " + (bad.size() - 1) + " more)" : ""));
                }
            }
            byName.entrySet().parallelStream().forEach(e -> {
                MemorySegment t = ckpt.tensor(e.getKey());
                for (TensorPatch p : e.getValue()) {
                    if (!p.checkedWhileWriting()) {
                        p.applyInPlace(t);
                        progress.report(v, "write", bytes.addAndGet(p.byteLength()), total);
                    }
                }
            });
            written[0] = bytes.get();
        }
        state = state.withVersion(v, step.runId() != null ? step.runId() : state.runId());
        writeState();
        progress.report(v, "done", 1, 1);
        return unknown;
    }

    /**
     * Checks sizes of every tensor with a digest, then hashes the new bytes of those not checked while
     * writing (dense replacements, non-xxh3 digests) without writing, against their expected digests.
     */
    private static void verifyDigests(long v, Checkpoint ckpt, Map<String, List<TensorPatch>> byName, ApplyProgress progress)
            throws RefusedVersionException {
        List<TensorPatch> checked = new ArrayList<>();
        for (List<TensorPatch> ps : byName.values()) {
            for (TensorPatch p : ps) {
                if (p.expected() != null) {
                    if (ps.size() != 1) {
                        throw new RefusedVersionException(v, RefusedVersionException.Reason.MALFORMED, "tensor " + p.name() + " is patched twice");
                    }
                    long have = ckpt.tensor(p.name()).byteSize();
                    if (have != p.byteLength()) {
                        throw new RefusedVersionException(v, RefusedVersionException.Reason.CHECKSUM,
                            "tensor " + p.name() + " has " + have + " bytes locally, the delta expects " + p.byteLength());
                    }
                    if (!p.checkedWhileWriting()) {
                        checked.add(p);
                    }
                }
            }
        }
        long total = checked.stream().mapToLong(TensorPatch::byteLength).sum();
        AtomicLong done = new AtomicLong();
        List<String> bad = checked.parallelStream().map(p -> {
            MemorySegment t = ckpt.tensor(p.name());
            if (t.byteSize() != p.byteLength()) {
                return "tensor " + p.name() + " has " + t.byteSize() + " bytes locally, the delta expects " + p.byteLength();
            }
            String got;
            try {
                got = p.newDigest(t);
            } catch (DeltaFormatException e) {
                return MALFORMED_MARK + e.getMessage();
            }
            progress.report(v, "verify", done.addAndGet(t.byteSize()), total);
            return got.equals(p.expected()) ? null : "tensor " + p.name() + ": digest of the new bytes is " + got + ", expected " + p.expected();
        }).filter(s -> s != null).sorted().toList();
        if (!bad.isEmpty()) {
            String first = bad.get(0);
            boolean malformed = first.startsWith(MALFORMED_MARK);
            throw new RefusedVersionException(v, malformed ? RefusedVersionException.Reason.MALFORMED : RefusedVersionException.Reason.CHECKSUM,
                (malformed ? first.substring(MALFORMED_MARK.length()) : first) + (bad.size() > 1 ? " (and " + (bad.size() - 1) + " more)" : ""));
        }
    }

    /** One tensor written by {@link TensorPatch#applyAndDigest}: how it went, and how to undo it. */
    private record CheckedWrite(TensorPatch.Written written, String problem) {

        static CheckedWrite of(TensorPatch p, MemorySegment tensor, SegmentAllocator undoMemory) {
            TensorPatch.Written w;
            if (touchedPages(p) >= 0.5) {
                // faulting everything in writable also dirties it, worth it only when the patch touches most pages anyway
                MappedRegions.populateWritable(tensor);
            }
            try {
                w = p.applyAndDigest(tensor, undoMemory);
            } catch (DeltaFormatException | IllegalArgumentException e) {
                // applyAndDigest already put the tensor back
                return new CheckedWrite(null, MALFORMED_MARK + e.getMessage());
            }
            String problem = w.digest().equals(p.expected()) ? null
                : "tensor " + p.name() + ": digest of the new bytes is " + w.digest() + ", expected " + p.expected();
            return new CheckedWrite(w, problem);
        }

        /** Expected fraction of the tensor's 4 KiB pages the patch writes (changes spread uniformly). */
        static double touchedPages(TensorPatch p) {
            long elements = p.byteLength() / Math.max(1, p.width());
            if (elements == 0 || p.count() >= elements) {
                return 1;
            }
            double density = (double) p.count() / elements;
            return 1 - Math.pow(1 - density, 4096.0 / Math.max(1, p.width()));
        }

        void undo() {
            if (written != null) {
                written.undo().run();
            }
        }
    }

    // ---- anchors and rebuilds --------------------------------------------------------------------

    private long loadAnchor(VersionStep step, ApplyProgress progress) throws IOException, RefusedVersionException {
        long v = step.version();
        Path full = step.directory().resolve(FullCheckpointWriter.ANCHOR_DIR);
        Path source = Files.isDirectory(full) ? full : step.directory();
        String prefix = source.equals(full) ? FullCheckpointWriter.ANCHOR_DIR + "/" : "";
        // a full version may be the version directory itself (slime layout, or the reset a disk_delta
        // publisher writes, docs/formats/disk-delta.md §3.5): the board's own manifest is no part of the checkpoint
        List<String> names = listFiles(source).stream().filter(n -> !(prefix.isEmpty() && n.equals(Manifest.FILE_NAME)))
            .toList();
        List<String> used = new ArrayList<>();
        for (String n : names) {
            used.add(prefix + n);
        }
        verifyArtifacts(step, used, progress);
        try (Checkpoint c = Checkpoint.open(source)) {
            if (dev.stitch.format.disk.DiskDeltaIndex.isDelta(source)) {
                throw new RefusedVersionException(v, RefusedVersionException.Reason.MALFORMED, source + " holds a delta index, not a full checkpoint");
            }
            progress.report(v, "anchor", 0, c.totalBytes());
        } catch (SafetensorsFormatException e) {
            throw new RefusedVersionException(v, RefusedVersionException.Reason.MALFORMED, e.getMessage(), e);
        }
        state = state.withApplying(v);
        writeState();
        long bytes = replaceWeights(source, names);
        state = state.withVersion(v, step.runId() != null ? step.runId() : state.runId());
        writeState();
        progress.report(v, "done", 1, 1);
        return bytes;
    }

    /**
     * Replaces the local checkpoint with the base checkpoint {@code base} (weight files copied, stale
     * shards pruned, other files kept) and records version 0 with the base fingerprint.
     */
    public void rebuildFrom(Path base) throws IOException {
        try (Checkpoint c = Checkpoint.open(base)) {
            c.names();
        }
        state = state.withApplying(0L);
        writeState();
        replaceWeights(base, listFiles(base));
        state = new HostState(0, null, null, HostState.currentBootId(), fingerprint(base), state.extra());
        writeState();
    }

    private long replaceWeights(Path source, List<String> names) throws IOException {
        long bytes = 0;
        for (String n : names) {
            Path src = source.resolve(n);
            try (FileChannel in = FileChannel.open(src, StandardOpenOption.READ)) {
                long size = in.size();
                AtomicFiles.DURABLE.write(local.resolve(n), out -> {
                    long pos = 0;
                    while (pos < size) {
                        long t = in.transferTo(pos, size - pos, out);
                        if (t <= 0) {
                            throw new IOException("short read copying " + src);
                        }
                        pos += t;
                    }
                });
                if (Files.size(local.resolve(n)) != size) {
                    throw new IOException("copy of " + src + " has the wrong size");
                }
                bytes += size;
            }
        }
        for (String n : listFiles(local)) {
            if (isWeightFile(n) && !names.contains(n)) {
                Files.delete(local.resolve(n));
            }
        }
        return bytes;
    }

    private static boolean isWeightFile(String n) {
        return n.endsWith(".safetensors") || n.equals(Checkpoint.INDEX);
    }

    private static List<String> listFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList();
        }
    }

    /** {@code sha256:<hex>} over {@code <name>:<size>:<mtime_ns>\n} of the checkpoint's files in name order. */
    public static String fingerprint(Path base) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (String n : listFiles(base)) {
                Path p = base.resolve(n);
                long mtimeNs = Files.getLastModifiedTime(p).to(java.util.concurrent.TimeUnit.NANOSECONDS);
                md.update((n + ":" + Files.size(p) + ":" + mtimeNs + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            return "sha256:" + HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- verification and state ------------------------------------------------------------------

    /** Checks each used file against its manifest artifact (size, then xxh3-128 or sha256) when one is given. */
    private static void verifyArtifacts(VersionStep step, List<String> used, ApplyProgress progress) throws IOException, RefusedVersionException {
        for (String rel : used) {
            String bad = Artifact.pathProblem(rel);
            if (bad != null) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.MALFORMED, bad);
            }
            Path p = step.directory().resolve(rel);
            if (Files.isSymbolicLink(p)) {
                // Readers follow no links inside the board (docs/protocol/board.md §1.6); the board checked listed files, not the unlisted index.
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.MALFORMED, "file " + rel
                    + " is a symbolic link (readers follow no links inside the board)");
            }
            if (!Files.isRegularFile(p)) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.MALFORMED, "file " + rel + " is missing");
            }
            Artifact a = step.artifacts().get(rel);
            if (a == null) {
                continue;
            }
            String problem = artifactProblem(p, a);
            if (problem != null) {
                throw new RefusedVersionException(step.version(), RefusedVersionException.Reason.CHECKSUM, rel + ": " + problem);
            }
        }
    }

    /** Why {@code file} does not match {@code a}, or null when it does (fields absent in {@code a} are not checked). */
    public static String artifactProblem(Path file, Artifact a) throws IOException {
        try {
            FilesystemBulletinBoard.verifyArtifactFile(file.getFileName().toString(), file, a, Kernels.get()::xxh3);
            return null;
        } catch (ArtifactVerificationException e) {
            return e.problem();
        }
    }

    private void writeState() throws IOException {
        stateFile.write(state);
    }

    @Override
    public void close() throws IOException {
        pool.shutdown();
        try {
            lock.release();
        } catch (IOException | UncheckedIOException e) {
            lockChannel.close();
            throw e;
        }
        lockChannel.close();
    }
}
