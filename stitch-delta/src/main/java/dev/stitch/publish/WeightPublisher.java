package dev.stitch.publish;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.encode.DeltaEncoder;
import dev.stitch.encode.VersionMemory;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.Snapshot;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.disk.DiskDeltaWriter;
import dev.stitch.format.sparse.SparseDeltaWriter;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import dev.stitch.memory.BufferAllocator;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The trainer's entry point: publishes each new set of weights as an immutable version on a
 * bulletin board, as a sparse delta against the last published weights.
 *
 * <pre>{@code
 * try (WeightPublisher publisher = WeightPublisher.builder()
 *         .board(Path.of("/mnt/board")).runId("run-a")
 *         .seedFrom(Path.of("/models/Qwen3-4B"))       // the checkpoint the engines serve
 *         .build()) {
 *     for (long step = 1; ; step++) {
 *         train();
 *         PublishResult r = publisher.publish(step, Weights.builder().add(...).build());
 *     }
 * }
 * }</pre>
 *
 * <p>Per version: the new weights are diffed against the snapshot (delta-formats.md 1); the first
 * backend of the list whose preconditions hold writes the transition (6), falling back down the list,
 * and a changed tensor set forces a full-only version (5); every {@code anchorInterval}-th version
 * also carries a full checkpoint; artifacts, manifest and pointer are published through the board's
 * transaction (board-and-sidecar.md 2.3). Only then does the snapshot advance, so after any failure
 * the next publish diffs against the last durable version. Retention runs the board's gc afterwards.
 *
 * <p>One publish at a time: {@link #publishAsync} runs it on a background thread and refuses a second
 * while one is in flight. The weights passed in must stay unchanged until the publish finished.
 */
public final class WeightPublisher implements AutoCloseable {

    /** The {@code metadata.publisher} value of our manifests. */
    public static final String PUBLISHER_ID = "stitch-java";

    private static final Logger LOG = LoggerFactory.getLogger(WeightPublisher.class);
    /** Diff output kept mapped between versions: a 3% version of a 2 GiB bf16 model fits. */
    private static final long RETAINED_DIFF_BYTES = 256L << 20;

    private final FilesystemBulletinBoard board;
    private final String runId;
    private final List<Backend> backends;
    private final ValueMode stitchValues;
    private final SparseEncoding sparseEncoding;
    private final ValueMode diskEncoding;
    private final long bucketBytes;
    private final long maxFileBytes;
    private final int anchorInterval;
    private final int keepLast;
    private final long gcMinAgeSeconds;
    private final boolean recordWeightsDigest;
    private final PublishProgress progress;
    private final String baseModel;
    private final Map<String, String> metadata;
    private final DeltaEncoder encoder;
    /** Kept for the publisher's life so its scratch memory stays mapped from one version to the next. */
    private final StitchDeltaWriter stitchWriter;
    /** Holds each version's changes until the snapshot advanced; reused so its pages stay mapped. */
    private final VersionMemory diffMemory;
    private final Snapshot snapshot;
    private final BufferAllocator memory;
    private final ExecutorService asyncExecutor;
    private final AtomicReference<String> inFlight = new AtomicReference<>();
    private final Object publishLock = new Object();
    private long lastPublished = -1;
    private boolean closed;
    private String broken;

    private WeightPublisher(Builder b, Snapshot snapshot, BufferAllocator memory) {
        this.board = b.board;
        this.runId = b.runId;
        this.backends = List.copyOf(b.backends);
        this.stitchValues = b.values;
        this.sparseEncoding = b.sparseEncoding;
        this.diskEncoding = b.diskEncoding;
        this.bucketBytes = b.bucketBytes;
        this.maxFileBytes = b.maxFileBytes;
        this.anchorInterval = b.anchorInterval;
        this.keepLast = b.keepLast;
        this.gcMinAgeSeconds = b.gcMinAgeSeconds;
        this.recordWeightsDigest = b.recordWeightsDigest;
        this.progress = b.progress;
        this.baseModel = b.baseModel;
        this.metadata = Map.copyOf(b.metadata);
        this.encoder = new DeltaEncoder(b.kernels, b.threads);
        this.stitchWriter = new StitchDeltaWriter(stitchValues, maxFileBytes, encoder.runner(), true);
        this.diffMemory = new VersionMemory(RETAINED_DIFF_BYTES);
        this.snapshot = snapshot;
        this.memory = memory;
        this.asyncExecutor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "stitch-publish");
            t.setDaemon(true);
            return t;
        });
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The board this publisher writes. */
    public FilesystemBulletinBoard board() {
        return board;
    }

    /** The run versions are published under, or null for a run-less board. */
    public String runId() {
        return runId;
    }

    /** The backend list, in fallback order. */
    public List<Backend> backends() {
        return backends;
    }

    /** The last version this publisher published durably, or -1. */
    public long lastPublishedVersion() {
        synchronized (publishLock) {
            return lastPublished;
        }
    }

    /** Weights digest (board-and-sidecar.md 7.4) of the snapshot: the last durably published weights. */
    public String snapshotDigest() {
        synchronized (publishLock) {
            checkOpen();
            return snapshot.weightsDigest();
        }
    }

    /** Publishes {@code weights} as {@code version}; see the class comment. */
    public PublishResult publish(long version, Weights weights) throws IOException {
        return publish(version, weights, Map.of());
    }

    /**
     * Publishes {@code weights} as {@code version}, adding {@code extraMetadata} to the manifest's
     * {@code metadata} object.
     *
     * @throws IllegalStateException when another publish is in flight
     * @throws dev.stitch.board.PointerMoveException when the board refuses the version (rewind, skip, conflict)
     */
    public PublishResult publish(long version, Weights weights, Map<String, String> extraMetadata) throws IOException {
        String label = "version " + version;
        if (!inFlight.compareAndSet(null, label)) {
            throw new IllegalStateException("a publish is already in flight (" + inFlight.get() + "); wait for it first");
        }
        try {
            return publishNow(version, weights.tensors(), extraMetadata);
        } finally {
            inFlight.set(null);
        }
    }

    /**
     * Starts publishing on the publisher's background thread. At most one publish is in flight: a
     * second call before the returned future completes fails with {@link IllegalStateException}.
     * The future fails with the publish's exception.
     */
    public CompletableFuture<PublishResult> publishAsync(long version, Weights weights) {
        return publishAsync(version, weights, Map.of());
    }

    /** As {@link #publishAsync(long, Weights)}, with extra manifest metadata. */
    public CompletableFuture<PublishResult> publishAsync(long version, Weights weights, Map<String, String> extraMetadata) {
        Objects.requireNonNull(weights, "weights");
        String label = "version " + version;
        if (!inFlight.compareAndSet(null, label)) {
            throw new IllegalStateException("a publish is already in flight (" + inFlight.get() + "); wait for it first");
        }
        CompletableFuture<PublishResult> future = new CompletableFuture<>();
        try {
            asyncExecutor.execute(() -> {
                PublishResult r;
                try {
                    r = publishNow(version, weights.tensors(), extraMetadata);
                } catch (Throwable t) {
                    inFlight.set(null);
                    future.completeExceptionally(t);
                    return;
                }
                // Cleared before completion so that a caller reacting to the future may publish again at once.
                inFlight.set(null);
                future.complete(r);
            });
        } catch (RuntimeException e) {
            inFlight.set(null);
            throw new IllegalStateException("publisher is closed", e);
        }
        return future;
    }

    private PublishResult publishNow(long version, Collection<TensorData> tensors, Map<String, String> extraMetadata)
            throws IOException {
        synchronized (publishLock) {
            checkOpen();
            long started = System.nanoTime();
            try {
                Attempt a = stage(version, tensors, extraMetadata, diffMemory);
                long snapStart = System.nanoTime();
                advanceSnapshot(version, a.encoded, tensors);
                long snapNanos = System.nanoTime() - snapStart;
                progress.report(version, "done", 1, 1);
                lastPublished = version;
                retention();
                PublishResult.Timings timings = new PublishResult.Timings(a.encoded.diffNanos(), a.encodeNanos,
                        a.anchorNanos, a.commitNanos, snapNanos, System.nanoTime() - started);
                EncodedVersion e = a.encoded;
                return new PublishResult(version, runId, a.backend.id(), a.encoding, a.valueMode, a.fallbackReason,
                        a.anchor, e.tensors(), e.changes().size(), e.totalElements(), e.changedElements(), e.changedBytes(),
                        e.totalBytes(), a.rawBytes, a.transitionBytes, a.fullBytes, a.files, timings, a.weightsDigest);
            } finally {
                // the changes are applied to the snapshot (or abandoned): their memory is free for the next version
                diffMemory.reset();
            }
        }
    }

    /** Everything up to and including the pointer move; the snapshot is untouched. */
    private Attempt stage(long version, Collection<TensorData> tensors, Map<String, String> extraMetadata,
                          SegmentAllocator arena)
            throws IOException {
        Attempt a = new Attempt();
        VersionPublication pub = board.beginPublish(runId, version);
        try {
            Path dir = pub.stagingDirectory();
            long modelBytes = 0;
            for (TensorData t : tensors) {
                modelBytes += t.bytes().byteSize();
            }
            long total = modelBytes;
            AtomicLong compared = new AtomicLong();
            LongConsumer diffProgress = bytes -> progress.report(version, "diff", compared.addAndGet(bytes), total);
            EncodedVersion encoded = encoder.diff(snapshot, tensors, diffMode(firstDeltaBackend()), arena, diffProgress,
                    recordsNewDigests(), firstDeltaBackend() == Backend.STITCH_DELTA);
            List<String> skipped = new ArrayList<>();
            Backend chosen = null;
            WriteResult written = null;
            if (encoded.layoutChanged()) {
                skipped.add(snapshot.isEmpty() ? "no snapshot to diff against (seed the publisher from the served checkpoint)"
                        : "the set of tensor names, dtypes or shapes changed");
                chosen = Backend.FULL;
            } else {
                for (Backend b : backends) {
                    if (b == Backend.FULL) {
                        chosen = b;
                        break;
                    }
                    ValueMode wanted = diffMode(b);
                    if (encoded.valueMode() != wanted) {
                        compared.set(0);
                        encoded = encoder.diff(snapshot, tensors, wanted, arena, diffProgress, recordsNewDigests(),
                                b == Backend.STITCH_DELTA);
                    }
                    progress.report(version, "encode", 0, encoded.changedBytes());
                    long t0 = System.nanoTime();
                    try {
                        written = VersionWriters.write(b, version, encoded.changes(), dir, this);
                        a.encodeNanos = System.nanoTime() - t0;
                        progress.report(version, "encode", encoded.changedBytes(), encoded.changedBytes());
                        chosen = b;
                        break;
                    } catch (PreconditionFailedException ex) {
                        skipped.add(ex.getMessage());
                    }
                }
            }
            if (chosen == null) {
                throw new IOException("no backend of " + backends + " can express version " + version + ": "
                        + String.join("; ", skipped));
            }
            a.encoded = encoded;
            a.backend = chosen;
            a.fallbackReason = skipped.isEmpty() ? null : String.join("; ", skipped);
            if (written != null) {
                a.rawBytes = written.rawBytes();
                for (WrittenFile f : written.files()) {
                    pub.addArtifact(f.path(), f.kind(), f.size(), f.xxh3());
                    a.transitionBytes += f.size();
                    a.files++;
                }
            }
            a.anchor = chosen == Backend.FULL || (anchorInterval > 0 && version % anchorInterval == 0);
            if (a.anchor) {
                progress.report(version, "anchor", 0, modelBytes);
                long t0 = System.nanoTime();
                WriteResult full = VersionWriters.writeAnchor(tensors, dir);
                for (WrittenFile f : full.files()) {
                    pub.addArtifact(f.path(), ArtifactKind.FULL, f.size(), f.xxh3());
                    a.fullBytes += f.size();
                    a.files++;
                }
                a.anchorNanos = System.nanoTime() - t0;
                progress.report(version, "anchor", modelBytes, modelBytes);
            }
            if (recordWeightsDigest) {
                a.weightsDigest = WeightsDigest.of(segments(tensors), encoder.kernels());
            }
            a.encoding = written == null ? null : written.deltaEncoding();
            a.valueMode = chosen == Backend.STITCH_DELTA ? stitchValues.id()
                    : chosen == Backend.DISK_DELTA ? diskEncoding.id() : null;
            ManifestFields fields = VersionWriters.manifestFields(chosen, written, encoded, tensors)
                    .withBaseModel(baseModel)
                    .withMetadata(metadataFor(a, encoded, extraMetadata));
            progress.report(version, "commit", 0, 1);
            long t0 = System.nanoTime();
            Manifest m = pub.commit(fields);
            a.commitNanos = System.nanoTime() - t0;
            progress.report(version, "commit", 1, 1);
            LOG.debug("published version {} ({} backend, {} files)", m.version(), m.backend(), a.files);
            return a;
        } catch (Throwable t) {
            try {
                pub.abort();
            } catch (IOException suppressed) {
                t.addSuppressed(suppressed);
            }
            throw t;
        }
    }

    /**
     * Moves the snapshot to the weights just published. If scattering the changes fails half-way the
     * snapshot is rebuilt from a full copy of those weights, since a wrong base would corrupt every
     * later delta; if even that fails the publisher refuses further work.
     */
    private void advanceSnapshot(long version, EncodedVersion encoded, Collection<TensorData> tensors) {
        try {
            encoder.advance(snapshot, encoded, tensors);
        } catch (RuntimeException e) {
            LOG.warn("advancing the snapshot to version {} failed ({}); copying the published weights instead",
                    version, e.getMessage());
            try {
                snapshot.reseed(tensors);
            } catch (RuntimeException | Error fatal) {
                broken = "the snapshot could not be brought to version " + version + " (" + fatal.getMessage()
                        + "); build a new publisher seeded from that version's checkpoint";
                fatal.addSuppressed(e);
                throw fatal;
            }
        }
    }

    private ObjectNode metadataFor(Attempt a, EncodedVersion e, Map<String, String> extra) {
        ObjectNode m = JsonNodeFactory.instance.objectNode();
        m.put("publisher", PUBLISHER_ID);
        m.put("changed_elements", e.changedElements());
        m.put("total_elements", e.totalElements());
        m.put("changed_bytes", e.changedBytes());
        if (a.backend != Backend.FULL) {
            m.put("encoded_raw_bytes", a.rawBytes);
            m.put("encoded_bytes", a.transitionBytes);
        }
        if (a.valueMode != null) {
            m.put("value_mode", a.valueMode);
        }
        if (a.fallbackReason != null) {
            m.put("fallback_reason", a.fallbackReason);
        }
        if (a.weightsDigest != null) {
            m.put("weights_digest", a.weightsDigest);
        }
        metadata.forEach(m::put);
        extra.forEach(m::put);
        return m;
    }

    private void retention() {
        if (keepLast <= 0) {
            return;
        }
        try {
            board.gc(keepLast, gcMinAgeSeconds);
        } catch (IOException | RuntimeException e) {
            // The version is already durable; a failed gc only delays cleanup until the next publish.
            LOG.warn("board gc after version {} failed: {}", lastPublished, e.getMessage());
        }
    }

    private Backend firstDeltaBackend() {
        for (Backend b : backends) {
            if (b != Backend.FULL) {
                return b;
            }
        }
        return Backend.FULL;
    }

    /** Whether a configured format records digests of new tensors, so the diff should hash them while it reads them. */
    private boolean recordsNewDigests() {
        return backends.contains(Backend.STITCH_DELTA) || backends.contains(Backend.DISK_DELTA);
    }

    /** The values a backend's writer wants: stitch_delta follows its value mode, the others read new bits. */
    private ValueMode diffMode(Backend b) {
        return b == Backend.STITCH_DELTA ? stitchValues : ValueMode.OVERWRITE;
    }

    private static Map<String, MemorySegment> segments(Collection<TensorData> tensors) {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        for (TensorData t : tensors) {
            m.put(t.name(), t.bytes());
        }
        return m;
    }

    ValueMode stitchValues() {
        return stitchValues;
    }

    SparseEncoding sparseEncoding() {
        return sparseEncoding;
    }

    ValueMode diskEncoding() {
        return diskEncoding;
    }

    long bucketBytes() {
        return bucketBytes;
    }

    long maxFileBytes() {
        return maxFileBytes;
    }

    int threads() {
        return encoder.threads();
    }

    StitchDeltaWriter stitchWriter() {
        return stitchWriter;
    }

    DeltaKernels kernels() {
        return encoder.kernels();
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("publisher is closed");
        }
        if (broken != null) {
            throw new IllegalStateException(broken);
        }
    }

    /** Waits for an in-flight publish, then frees the snapshot, the encoder and the background thread. */
    @Override
    public void close() {
        asyncExecutor.shutdown();
        try {
            while (!asyncExecutor.awaitTermination(1, TimeUnit.SECONDS)) {
                LOG.info("waiting for the in-flight publish ({}) before closing", inFlight.get());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (publishLock) {
            if (!closed) {
                closed = true;
                stitchWriter.close();
                diffMemory.close();
                encoder.close();
                snapshot.close();
                memory.close();
            }
        }
    }

    private static Snapshot seedSnapshot(BufferAllocator memory, Weights w, PublishProgress progress) {
        long total = w.byteSize();
        AtomicLong copied = new AtomicLong();
        return Snapshot.copyOf(memory, w.tensors(), bytes -> progress.report(0, "seed", copied.addAndGet(bytes), total));
    }

    /** Mutable state of one publish attempt. */
    private static final class Attempt {
        EncodedVersion encoded;
        Backend backend;
        String encoding;
        String valueMode;
        String fallbackReason;
        boolean anchor;
        long rawBytes;
        long transitionBytes;
        long fullBytes;
        int files;
        long encodeNanos;
        long anchorNanos;
        long commitNanos;
        String weightsDigest;
    }

    /** Configures a {@link WeightPublisher}; only the board is required. */
    public static final class Builder {
        private FilesystemBulletinBoard board;
        private String runId;
        private List<Backend> backends = List.of(Backend.STITCH_DELTA, Backend.FULL);
        private ValueMode values = ValueMode.XOR;
        private SparseEncoding sparseEncoding = SparseEncoding.DELTAS_ZSTD;
        private ValueMode diskEncoding = ValueMode.OVERWRITE;
        private long bucketBytes = SparseDeltaWriter.DEFAULT_BUFFER_SIZE;
        private long maxFileBytes = DiskDeltaWriter.DEFAULT_MAX_FILE_BYTES;
        private int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
        private int anchorInterval = 25;
        private int keepLast;
        private long gcMinAgeSeconds = 600;
        private boolean recordWeightsDigest;
        private String baseModel;
        private final Map<String, String> metadata = new LinkedHashMap<>();
        private DeltaKernels kernels;
        private Path seedCheckpoint;
        private Weights seedWeights;
        private boolean pinSnapshot = true;
        private PublishProgress progress = PublishProgress.NONE;

        private Builder() {
        }

        /** The board to publish to. */
        public Builder board(FilesystemBulletinBoard board) {
            this.board = Objects.requireNonNull(board, "board");
            return this;
        }

        /** A stitch-layout board at {@code root} with default options (created on the first publish). */
        public Builder board(Path root) {
            return board(FilesystemBulletinBoard.open(root));
        }

        /** The run (fencing epoch); null (the default) publishes on a run-less board. */
        public Builder runId(String runId) {
            this.runId = runId;
            return this;
        }

        /** Ordered backend list with fallback (delta-formats.md 6); default {@code [stitch_delta, full]}. */
        public Builder backends(Backend... list) {
            return backends(List.of(list));
        }

        public Builder backends(List<Backend> list) {
            if (list.isEmpty()) {
                throw new IllegalArgumentException("the backend list is empty");
            }
            if (list.stream().distinct().count() != list.size()) {
                throw new IllegalArgumentException("backend listed twice in " + list);
            }
            this.backends = List.copyOf(list);
            return this;
        }

        /** stitch_delta value mode; default {@code xor}. */
        public Builder values(ValueMode mode) {
            this.values = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** sparse_delta position encoding; default {@code deltas_zstd}. */
        public Builder sparseEncoding(SparseEncoding encoding) {
            this.sparseEncoding = Objects.requireNonNull(encoding, "encoding");
            return this;
        }

        /** disk_delta payload encoding; default {@code overwrite} (idempotent). */
        public Builder diskEncoding(ValueMode mode) {
            this.diskEncoding = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** sparse_delta bucket cap in encoded bytes; default 512 MiB. */
        public Builder bucketBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("bucket size must be positive");
            }
            this.bucketBytes = bytes;
            return this;
        }

        /** disk_delta file split size; default 2 GiB. */
        public Builder maxFileBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("file size limit must be positive");
            }
            this.maxFileBytes = bytes;
            return this;
        }

        /** Threads for the diff and the snapshot update; default: every core. */
        public Builder threads(int threads) {
            if (threads < 1) {
                throw new IllegalArgumentException("threads must be at least 1");
            }
            this.threads = threads;
            return this;
        }

        /** Every {@code n}-th version also carries a full checkpoint; default 25, 0 = never. */
        public Builder anchorInterval(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("anchor interval must be non-negative");
            }
            this.anchorInterval = n;
            return this;
        }

        /** Retention: after each publish, board gc keeping the last {@code n} versions (0, the default, = no gc). */
        public Builder keepLast(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("keep-last must be non-negative");
            }
            this.keepLast = n;
            return this;
        }

        /** gc's minimum version age; default 600 s. */
        public Builder gcMinAgeSeconds(long seconds) {
            if (seconds < 0) {
                throw new IllegalArgumentException("minimum age must be non-negative");
            }
            this.gcMinAgeSeconds = seconds;
            return this;
        }

        /** Also compute the weights digest of each version into {@code metadata.weights_digest} (costs one hash pass). */
        public Builder recordWeightsDigest(boolean on) {
            this.recordWeightsDigest = on;
            return this;
        }

        /** Informational {@code base_model} of the manifests. */
        public Builder baseModel(String name) {
            this.baseModel = name;
            return this;
        }

        /** An entry added to every manifest's {@code metadata}. */
        public Builder metadata(String key, String value) {
            this.metadata.put(Objects.requireNonNull(key), Objects.requireNonNull(value));
            return this;
        }

        /**
         * Whether the snapshot's pages are locked in RAM (default true; falls back to unlocked memory,
         * with one warning, when the memory-lock limit is too low).
         */
        public Builder pinSnapshot(boolean pin) {
            this.pinSnapshot = pin;
            return this;
        }

        /** Progress of seeding and of each publish (default: none). */
        public Builder progress(PublishProgress listener) {
            this.progress = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /** The kernels; default {@link Kernels#get()}. */
        public Builder kernels(DeltaKernels kernels) {
            this.kernels = kernels;
            return this;
        }

        /**
         * Seeds the snapshot, byte for byte, from the HF checkpoint the engines serve (delta-formats.md
         * 1.2): a directory with {@code model.safetensors} or a sharded index.
         */
        public Builder seedFrom(Path checkpointDir) {
            this.seedCheckpoint = Objects.requireNonNull(checkpointDir, "checkpointDir");
            this.seedWeights = null;
            return this;
        }

        /** Seeds the snapshot with a copy of {@code weights} (which the caller still owns). */
        public Builder seed(Weights weights) {
            this.seedWeights = Objects.requireNonNull(weights, "weights");
            this.seedCheckpoint = null;
            return this;
        }

        /**
         * Builds the publisher, reading the seed. Without a seed the first version is full-only.
         *
         * @throws IOException when the seed checkpoint cannot be read
         */
        public WeightPublisher build() throws IOException {
            if (board == null) {
                throw new IllegalStateException("a publisher needs a board");
            }
            if (kernels == null) {
                kernels = Kernels.get();
            }
            BufferAllocator memory = pinSnapshot ? BufferAllocator.pinned("stitch-publisher")
                    : BufferAllocator.unpinned("stitch-publisher");
            Snapshot snap = null;
            try {
                if (seedCheckpoint != null) {
                    try (Weights w = CheckpointWeights.open(seedCheckpoint)) {
                        snap = seedSnapshot(memory, w, progress);
                    }
                } else if (seedWeights != null) {
                    snap = seedSnapshot(memory, seedWeights, progress);
                } else {
                    snap = Snapshot.empty(memory);
                }
                return new WeightPublisher(this, snap, memory);
            } catch (IOException | RuntimeException | Error e) {
                if (snap != null) {
                    snap.close();
                }
                memory.close();
                throw e;
            }
        }
    }
}
