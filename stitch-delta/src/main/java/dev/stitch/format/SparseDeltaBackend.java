package dev.stitch.format;

import dev.stitch.board.ManifestFields;
import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorData;
import dev.stitch.format.sparse.SparseDeltaFile;
import dev.stitch.format.sparse.SparseDeltaWriter;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.format.sparse.SparsePatches;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** {@link DeltaFormat#SPARSE_DELTA}: slime v1 files (docs/formats/sparse-delta.md §2). */
final class SparseDeltaBackend extends DeltaFormat {

    SparseDeltaBackend() {
        super("sparse_delta");
    }

    @Override
    public FullFallback fullFallback() {
        return FullFallback.REFUSED;
    }

    @Override
    public FormatOptions withCodec(FormatOptions options, String codec) {
        return options.withSparseEncoding(SparseEncoding.parse(codec));
    }

    @Override
    public VersionWriter newWriter(FormatOptions options, ChunkRunner runner) {
        return new SparseDeltaWriter(options.sparseEncoding(), options.bucketBytes(), 0);
    }

    @Override
    public ManifestFields manifestFields(WriteResult written, EncodedVersion encoded, Collection<TensorData> tensors) {
        String enc = written.deltaEncoding();
        return ManifestFields.of(id(), "delta")
                .withCodec(enc, SparseEncoding.DELTAS_ZSTD.id().equals(enc) ? "zstd" : null, null)
                .withTransitionWeights(changedNames(encoded));
    }

    @Override
    public VersionPatches readPatches(VersionFiles files, Checkpoint local) throws IOException {
        Map<String, List<TensorPatch>> byName = new TreeMap<>();
        List<String> unknown = new ArrayList<>();
        for (String f : files.transitionFiles()) {
            SparseDeltaFile sf = SparseDeltaFile.read(files.directory().resolve(f));
            unknown.addAll(sf.check(local::spec));
            for (int i = 0; i < sf.params().size(); i++) {
                String name = sf.params().get(i).name();
                if (local.contains(name)) {
                    byName.computeIfAbsent(name, k -> new ArrayList<>()).add(SparsePatches.of(sf, i));
                }
            }
        }
        return new VersionPatches(byName, unknown);
    }
}
