package dev.stitch.format;

import dev.stitch.board.ManifestFields;
import dev.stitch.digest.Digests;
import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.stitchdelta.StitchDeltaFile;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** {@link DeltaFormat#STITCH_DELTA}: this project's format (docs/formats/stitch-delta.md §4, docs/formats/stitch-delta.md). */
final class StitchDeltaBackend extends DeltaFormat {

    StitchDeltaBackend() {
        super("stitch_delta");
    }

    @Override
    public FullFallback fullFallback() {
        return FullFallback.ANCHOR_DIRECTORY;
    }

    @Override
    public ValueMode diffValues(FormatOptions options) {
        return options.stitchValues();
    }

    @Override
    public boolean recordsNewDigests() {
        return true;
    }

    @Override
    public boolean takesEscapedPlanes() {
        return true;
    }

    @Override
    public FormatOptions withCodec(FormatOptions options, String codec) {
        return options.withStitchValues(ValueMode.parse(codec));
    }

    @Override
    public String valueMode(FormatOptions options) {
        return options.stitchValues().id();
    }

    @Override
    public VersionWriter newWriter(FormatOptions options, ChunkRunner runner) {
        // a publisher's writer (with workers) keeps its scratch from one version to the next
        return runner == null ? new StitchDeltaWriter(options.stitchValues(), options.maxFileBytes())
                : new StitchDeltaWriter(options.stitchValues(), options.maxFileBytes(), runner, true);
    }

    @Override
    public ManifestFields manifestFields(WriteResult written, EncodedVersion encoded, Collection<TensorData> tensors) {
        return ManifestFields.of(id(), "auto")
                .withCodec(written.deltaEncoding(), "zstd", Digests.XXH3_128)
                .withTransitionWeights(changedNames(encoded));
    }

    @Override
    public VersionPatches readPatches(VersionFiles files, Checkpoint local) throws IOException {
        Map<String, List<TensorPatch>> byName = new TreeMap<>();
        for (String f : files.transitionFiles()) {
            StitchDeltaFile sd = StitchDeltaFile.read(files.directory().resolve(f));
            if (sd.version() != files.version() || sd.baseVersion() != files.baseVersion()) {
                throw new DeltaFormatException(f + ": file says version " + sd.version() + " on base " + sd.baseVersion()
                        + ", the manifest says " + files.version() + " on " + files.baseVersion());
            }
            for (TensorPatch p : sd.patches(local::spec)) {
                if (byName.containsKey(p.name())) {
                    throw new DeltaFormatException(f + ": tensor " + p.name() + " appears twice in one version");
                }
                byName.computeIfAbsent(p.name(), k -> new ArrayList<>()).add(p);
            }
        }
        return new VersionPatches(byName, List.of());
    }
}
