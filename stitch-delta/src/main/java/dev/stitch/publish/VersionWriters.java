package dev.stitch.publish;

import dev.stitch.board.ManifestFields;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorChange;
import dev.stitch.encode.TensorData;
import dev.stitch.digest.Digests;
import dev.stitch.format.WriteResult;
import dev.stitch.format.disk.DiskDeltaWriter;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.format.sparse.SparseDeltaWriter;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/** Maps each backend to its format writer and to its manifest fields (board-and-sidecar.md 1.4). */
final class VersionWriters {

    private VersionWriters() {
    }

    /**
     * Writes the transition of {@code changes} in {@code backend}'s format into {@code dir}.
     *
     * @throws dev.stitch.format.PreconditionFailedException when the format cannot express the version (nothing written)
     */
    static WriteResult write(Backend backend, long version, List<TensorChange> changes, Path dir, WeightPublisher p)
            throws IOException {
        return switch (backend) {
            case SPARSE_DELTA -> new SparseDeltaWriter(p.sparseEncoding(), p.bucketBytes(), 0).write(version, changes, dir);
            case DISK_DELTA -> new DiskDeltaWriter(p.diskEncoding(), p.maxFileBytes()).write(version, changes, dir);
            case STITCH_DELTA -> p.stitchWriter().write(version, changes, dir);
            case FULL -> throw new IllegalArgumentException("full versions have no transition");
        };
    }

    /** Writes the whole weights as an HF checkpoint under {@code full/} of {@code dir}. */
    static WriteResult writeAnchor(Collection<TensorData> tensors, Path dir) throws IOException {
        return FullCheckpointWriter.defaults().write(List.copyOf(tensors), dir, FullCheckpointWriter.ANCHOR_DIR);
    }

    /** Manifest fields of a version written by {@code backend} (null {@code written} for a full-only version). */
    static ManifestFields manifestFields(Backend backend, WriteResult written, EncodedVersion encoded,
                                         Collection<TensorData> tensors) {
        return switch (backend) {
            case SPARSE_DELTA -> {
                String enc = written.deltaEncoding();
                yield ManifestFields.of(backend.id(), "delta")
                        .withCodec(enc, SparseEncoding.DELTAS_ZSTD.id().equals(enc) ? "zstd" : null, null)
                        .withTransitionWeights(changedNames(encoded));
            }
            case DISK_DELTA -> ManifestFields.of(backend.id(), "auto")
                    .withCodec(written.deltaEncoding(), "zstd", Digests.XXH3_128)
                    .withTransitionWeights(changedNames(encoded));
            case STITCH_DELTA -> ManifestFields.of(backend.id(), "auto")
                    .withCodec(written.deltaEncoding(), "zstd", Digests.XXH3_128)
                    .withTransitionWeights(changedNames(encoded));
            case FULL -> ManifestFields.of(backend.id(), "auto").withTransitionWeights(allNames(tensors));
        };
    }

    private static List<String> changedNames(EncodedVersion encoded) {
        List<String> names = new ArrayList<>(encoded.changes().size());
        for (TensorChange c : encoded.changes()) {
            names.add(c.spec().name());
        }
        names.sort(WeightsDigest.NAME_ORDER);
        return names;
    }

    private static List<String> allNames(Collection<TensorData> tensors) {
        List<String> names = new ArrayList<>(tensors.size());
        for (TensorData t : tensors) {
            names.add(t.name());
        }
        names.sort(WeightsDigest.NAME_ORDER);
        return names;
    }
}
