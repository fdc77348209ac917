package dev.stitch.publish;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.PublishingBoard;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.encode.DeltaEncoder;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.Snapshot;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.encode.VersionMemory;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatOptions;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.memory.BufferAllocator;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
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
 * <p>Per version: the new weights are diffed against the snapshot (docs/formats/common.md §1); the first
 * backend of the list whose preconditions hold writes the transition (6), falling back down the list,
 * and a changed tensor set forces a full-only version (5), written where the listed formats' readers
 * look for one, or refused when they cannot load it ({@link Builder#allowFullFallback}); the anchor policy
 * ({@link Builder#anchorInterval}, {@link Builder#anchorBytesFraction}) adds a full checkpoint to some versions;
 * artifacts, manifest and pointer are published through the board's transaction (docs/protocol/board.md §2.3).
 * Only then are rollout hosts notified ({@link Builder#notify}) and does the snapshot advance, so after any
 * failure the next publish diffs against the last durable version. Retention runs the board's gc afterwards.
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

    private final PublisherSettings settings;
    private final DeltaEncoder encoder;
    /** Encodes, writes and commits each version; holds the format writers for the publisher's life. */
    private final VersionStager stager;
    /** Holds each version's changes until the snapshot advanced; reused so its pages stay mapped. */
    private final VersionMemory diffMemory;
    private final Snapshot snapshot;
    private final BufferAllocator memory;
    private final ExecutorService asyncExecutor;
    /** Wakes rollout hosts after each publish, or null. */
    private final WakeNotifier notifier;
    private final AtomicReference<String> inFlight = new AtomicReference<>();
    private final Object publishLock = new Object();
    private long lastPublished = -1;
    private boolean closed;
    private String broken;

    private WeightPublisher(PublisherSettings settings, DeltaKernels kernels, int threads, Snapshot snapshot,
                            BufferAllocator memory, WakeNotifier notifier) {
        this.settings = settings;
        this.notifier = notifier;
        this.encoder = new DeltaEncoder(kernels, threads);
        this.stager = new VersionStager(settings, encoder, snapshot);
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
    public PublishingBoard board() {
        return settings.board();
    }

    /** The run versions are published under, or null for a run-less board. */
    public String runId() {
        return settings.runId();
    }

    /** The backend list, in fallback order. */
    public List<DeltaFormat> backends() {
        return settings.formats();
    }

    /** The last version this publisher published durably, or -1. */
    public long lastPublishedVersion() {
        synchronized (publishLock) {
            return lastPublished;
        }
    }

    /** Weights digest (docs/protocol/sync-and-engines.md §7.4) of the snapshot: the last durably published weights. */
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
                StagedVersion a = stager.stage(version, tensors, extraMetadata, diffMemory);
                // The pointer moved: hosts start reading while the snapshot advances.
                CompletableFuture<PublishResult.Notifications> woken = notifier == null
                        ? CompletableFuture.completedFuture(PublishResult.Notifications.NONE) : notifier.published(version);
                long snapStart = System.nanoTime();
                advanceSnapshot(version, a.encoded, tensors);
                long snapNanos = System.nanoTime() - snapStart;
                settings.progress().report(version, "done", 1, 1);
                lastPublished = version;
                retention();
                return a.result(version, settings.runId(), snapNanos, System.nanoTime() - started, woken.join());
            } finally {
                // the changes are applied to the snapshot (or abandoned): their memory is free for the next version
                diffMemory.reset();
            }
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

    private void retention() {
        if (settings.keepLast() <= 0) {
            return;
        }
        try {
            settings.board().gc(settings.keepLast(), settings.gcMinAgeSeconds());
        } catch (IOException | RuntimeException e) {
            // The version is already durable; a failed gc only delays cleanup until the next publish.
            LOG.warn("board gc after version {} failed: {}", lastPublished, e.getMessage());
        }
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
                stager.close();
                if (notifier != null) {
                    notifier.close();
                }
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

    /** Configures a {@link WeightPublisher}; only the board is required. */
    public static final class Builder {
        private PublishingBoard board;
        private String runId;
        private List<DeltaFormat> backends = List.of(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL);
        private FormatOptions formatOptions = FormatOptions.defaults();
        private boolean allowFullFallback;
        private int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
        private int anchorInterval = 25;
        private double anchorBytesFraction;
        private List<URI> notifyUrls = List.of();
        private String notifyToken;
        private Duration notifyTimeout = WakeNotifier.DEFAULT_TIMEOUT;
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

        /** The board to publish to: a directory, or S3 (docs/protocol/board.md §7). */
        public Builder board(PublishingBoard board) {
            this.board = Objects.requireNonNull(board, "board");
            return this;
        }

        /** A stitch-layout board at {@code root} with default options (created on the first publish). */
        public Builder board(Path root) {
            return board(FilesystemBulletinBoard.open(root));
        }

        /**
         * The board at {@code location}: a path, {@code file:} or {@code s3://bucket/prefix} URI, with
         * default options (S3 through the AWS credential, region and endpoint chains; stitch-s3 on the
         * class path). HTTP boards are read-only and refused.
         */
        public Builder board(URI location) throws java.io.IOException {
            BoardAddress address = BoardAddress.parse(location.toString());
            return board(PublishingBoard.open(address, BoardOptions.defaults(), RemoteBoardOptions.defaults(address)));
        }

        /** The run (fencing epoch); null (the default) publishes on a run-less board. */
        public Builder runId(String runId) {
            this.runId = runId;
            return this;
        }

        /** Ordered backend list with fallback (docs/formats/anchors-and-fallback.md §6); default {@code [stitch_delta, full]}. */
        public Builder backends(DeltaFormat... list) {
            return backends(List.of(list));
        }

        public Builder backends(List<DeltaFormat> list) {
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
            this.formatOptions = formatOptions.withStitchValues(Objects.requireNonNull(mode, "mode"));
            return this;
        }

        /** sparse_delta position encoding; default {@code deltas_zstd}. */
        public Builder sparseEncoding(SparseEncoding encoding) {
            this.formatOptions = formatOptions.withSparseEncoding(Objects.requireNonNull(encoding, "encoding"));
            return this;
        }

        /** disk_delta payload encoding; default {@code overwrite} (idempotent). */
        public Builder diskEncoding(ValueMode mode) {
            this.formatOptions = formatOptions.withDiskEncoding(Objects.requireNonNull(mode, "mode"));
            return this;
        }

        /** sparse_delta bucket cap in encoded bytes; default 512 MiB. */
        public Builder bucketBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("bucket size must be positive");
            }
            this.formatOptions = formatOptions.withBucketBytes(bytes);
            return this;
        }

        /** disk_delta file split size; default 2 GiB. */
        public Builder maxFileBytes(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("file size limit must be positive");
            }
            this.formatOptions = formatOptions.withMaxFileBytes(bytes);
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

        /**
         * A version also carries a full checkpoint once the transition bytes published since the newest anchor
         * would exceed {@code fraction} of that anchor's size, so a late joiner (anchor + tail) reads at most
         * {@code 1 + fraction} anchors' worth (docs/protocol/board.md §2.6); combined with the interval, whichever
         * fires first. Default 0 = off.
         */
        public Builder anchorBytesFraction(double fraction) {
            if (!(fraction >= 0) || Double.isInfinite(fraction)) {
                throw new IllegalArgumentException("anchor bytes fraction must be a finite number >= 0, not " + fraction);
            }
            this.anchorBytesFraction = fraction;
            return this;
        }

        /**
         * After each publish, POST a wake to each of {@code urls} (a sidecar's base URL, or a fan-out endpoint)
         * with {@code token} as a bearer token (null: none); best effort (docs/protocol/board.md §7.7).
         */
        public Builder notify(List<URI> urls, String token) {
            urls.forEach(WakeNotifier::target); // a malformed URL fails here, not after the seed was read
            this.notifyUrls = List.copyOf(urls);
            this.notifyToken = token;
            return this;
        }

        /** How long one wake notification may take; default 2 s. */
        public Builder notifyTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("the notification timeout must be positive, not " + timeout);
            }
            this.notifyTimeout = timeout;
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

        /**
         * Whether a version that must be published in full (a changed tensor set, or a change no listed
         * delta format can carry) may be, when a listed format's readers cannot take full versions:
         * upstream sparse_delta consumers mark one applied without loading it (docs/formats/sparse-delta.md §2.8).
         * Default false: such a publish fails with {@link FullFallbackRefusedException} and publishes nothing.
         */
        public Builder allowFullFallback(boolean allow) {
            this.allowFullFallback = allow;
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
         * Seeds the snapshot, byte for byte, from the HF checkpoint the engines serve (docs/formats/common.md §1.2): a directory with {@code model.safetensors} or a sharded index.
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
                PublisherSettings settings = new PublisherSettings(board, runId, backends, formatOptions, anchorInterval,
                        anchorBytesFraction, keepLast, gcMinAgeSeconds, recordWeightsDigest, allowFullFallback, baseModel,
                        metadata, progress);
                WakeNotifier notifier = notifyUrls.isEmpty() ? null : new WakeNotifier(notifyUrls, notifyToken, notifyTimeout);
                return new WeightPublisher(settings, kernels, threads, snap, memory, notifier);
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
