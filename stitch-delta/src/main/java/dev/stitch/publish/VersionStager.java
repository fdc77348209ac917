package dev.stitch.publish;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.digest.WeightsDigest;
import dev.stitch.encode.DeltaEncoder;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.Snapshot;
import dev.stitch.encode.TensorData;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatOptions;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.VersionWriter;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stages one version on the board: diff against the snapshot, the first format of the list that can
 * express it writes the transition (docs/formats/anchors-and-fallback.md §6), a full checkpoint where the version must be
 * full or is an anchor, the manifest fields, and the board's commit (docs/protocol/board.md §2.3). The
 * snapshot is only read; on any failure the publication is aborted and nothing is visible.
 */
final class VersionStager implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(VersionStager.class);

    private final PublisherSettings settings;
    private final DeltaEncoder encoder;
    private final Snapshot snapshot;
    private final FullVersionRule fullRule;
    private final AnchorPolicy anchors;
    /** One writer per configured delta format, kept for the publisher's life (stitch_delta's keeps its scratch). */
    private final Map<DeltaFormat, VersionWriter> writers = new LinkedHashMap<>();

    VersionStager(PublisherSettings settings, DeltaEncoder encoder, Snapshot snapshot) {
        this.settings = settings;
        this.encoder = encoder;
        this.snapshot = snapshot;
        this.fullRule = new FullVersionRule(settings.formats(), settings.allowFullFallback());
        this.anchors = new AnchorPolicy(settings.anchorInterval(), settings.anchorBytesFraction());
        for (DeltaFormat f : settings.formats()) {
            if (f.hasTransition()) {
                writers.put(f, f.newWriter(settings.formatOptions(), encoder.runner()));
            }
        }
    }

    /** Everything up to and including the pointer move; the snapshot is untouched. */
    StagedVersion stage(long version, Collection<TensorData> tensors, Map<String, String> extraMetadata,
                        SegmentAllocator arena) throws IOException {
        PublishProgress progress = settings.progress();
        FormatOptions options = settings.formatOptions();
        StagedVersion a = new StagedVersion();
        VersionPublication pub = settings.board().beginPublish(settings.runId(), version);
        try {
            Path dir = pub.stagingDirectory();
            long modelBytes = 0;
            for (TensorData t : tensors) {
                modelBytes += t.bytes().byteSize();
            }
            anchors.prepare(settings.board(), version, modelBytes);
            long total = modelBytes;
            AtomicLong compared = new AtomicLong();
            LongConsumer diffProgress = bytes -> progress.report(version, "diff", compared.addAndGet(bytes), total);
            DeltaFormat first = firstDeltaFormat();
            EncodedVersion encoded = encoder.diff(snapshot, tensors, first.diffValues(options), arena, diffProgress,
                    recordsNewDigests(), first.takesEscapedPlanes());
            List<String> skipped = new ArrayList<>();
            DeltaFormat chosen = null;
            WriteResult written = null;
            if (encoded.layoutChanged()) {
                skipped.add(snapshot.isEmpty() ? "no snapshot to diff against (seed the publisher from the served checkpoint)"
                        : "the set of tensor names, dtypes or shapes changed (layout change: "
                        + FullVersionRule.layoutChange(snapshot.specs(), tensors) + ")");
                chosen = DeltaFormat.FULL;
            } else {
                for (DeltaFormat f : settings.formats()) {
                    if (!f.hasTransition()) {
                        chosen = f;
                        break;
                    }
                    if (encoded.valueMode() != f.diffValues(options)) {
                        compared.set(0);
                        encoded = encoder.diff(snapshot, tensors, f.diffValues(options), arena, diffProgress,
                                recordsNewDigests(), f.takesEscapedPlanes());
                    }
                    progress.report(version, "encode", 0, encoded.changedBytes());
                    long t0 = System.nanoTime();
                    try {
                        written = writers.get(f).write(version, encoded.changes(), dir);
                        a.encodeNanos = System.nanoTime() - t0;
                        progress.report(version, "encode", encoded.changedBytes(), encoded.changedBytes());
                        chosen = f;
                        break;
                    } catch (PreconditionFailedException ex) {
                        skipped.add(ex.getMessage());
                    }
                }
            }
            if (chosen == null) {
                throw new IOException("no backend of " + settings.formats() + " can express version " + version + ": "
                        + String.join("; ", skipped));
            }
            boolean fullOnly = !chosen.hasTransition();
            if (fullOnly && !skipped.isEmpty()) {
                fullRule.check(version, String.join("; ", skipped));
            }
            a.encoded = encoded;
            a.format = chosen;
            a.fallbackReason = skipped.isEmpty() ? null : String.join("; ", skipped);
            if (written != null) {
                a.rawBytes = written.rawBytes();
                for (WrittenFile f : written.files()) {
                    pub.addArtifact(f.path(), f.kind(), f.size(), f.xxh3());
                    a.transitionBytes += f.size();
                    a.files++;
                }
            }
            a.anchor = fullOnly || anchors.wantsAnchor(version, a.transitionBytes, modelBytes);
            if (a.anchor) {
                progress.report(version, "anchor", 0, modelBytes);
                long t0 = System.nanoTime();
                WriteResult full = fullRule.writeCheckpoint(tensors, dir, fullOnly);
                for (WrittenFile f : full.files()) {
                    pub.addArtifact(f.path(), ArtifactKind.FULL, f.size(), f.xxh3());
                    a.fullBytes += f.size();
                    a.files++;
                }
                a.anchorNanos = System.nanoTime() - t0;
                progress.report(version, "anchor", modelBytes, modelBytes);
            }
            if (settings.recordWeightsDigest()) {
                a.weightsDigest = WeightsDigest.of(segments(tensors), encoder.kernels());
            }
            a.encoding = written == null ? null : written.deltaEncoding();
            a.valueMode = chosen.valueMode(options);
            ManifestFields fields = chosen.manifestFields(written, encoded, tensors)
                    .withBaseModel(settings.baseModel())
                    .withMetadata(metadataFor(a, encoded, extraMetadata));
            progress.report(version, "commit", 0, 1);
            long t0 = System.nanoTime();
            Manifest m = pub.commit(fields);
            a.commitNanos = System.nanoTime() - t0;
            anchors.published(version, a.anchor, a.transitionBytes, a.fullBytes);
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

    private ObjectNode metadataFor(StagedVersion a, EncodedVersion e, Map<String, String> extra) {
        ObjectNode m = JsonNodeFactory.instance.objectNode();
        m.put("publisher", WeightPublisher.PUBLISHER_ID);
        m.put("changed_elements", e.changedElements());
        m.put("total_elements", e.totalElements());
        m.put("changed_bytes", e.changedBytes());
        if (a.format.hasTransition()) {
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
        settings.metadata().forEach(m::put);
        extra.forEach(m::put);
        return m;
    }

    private DeltaFormat firstDeltaFormat() {
        for (DeltaFormat f : settings.formats()) {
            if (f.hasTransition()) {
                return f;
            }
        }
        return DeltaFormat.FULL;
    }

    /** Whether a configured format records digests of new tensors, so the diff should hash them while it reads them. */
    private boolean recordsNewDigests() {
        for (DeltaFormat f : settings.formats()) {
            if (f.recordsNewDigests()) {
                return true;
            }
        }
        return false;
    }

    private static Map<String, MemorySegment> segments(Collection<TensorData> tensors) {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        for (TensorData t : tensors) {
            m.put(t.name(), t.bytes());
        }
        return m;
    }

    /** Frees the writers' retained memory. */
    @Override
    public void close() {
        for (VersionWriter w : writers.values()) {
            w.close();
        }
    }
}
