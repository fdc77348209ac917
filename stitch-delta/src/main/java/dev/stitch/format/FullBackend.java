package dev.stitch.format;

import dev.stitch.board.ManifestFields;
import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorData;
import dev.stitch.safetensors.Checkpoint;
import java.util.Collection;

/** {@link DeltaFormat#FULL}: a full-only version, a complete HF checkpoint and no transition (docs/formats/anchors-and-fallback.md §5). */
final class FullBackend extends DeltaFormat {

    FullBackend() {
        super("full");
    }

    @Override
    public boolean hasTransition() {
        return false;
    }

    @Override
    public FullFallback fullFallback() {
        return FullFallback.ANCHOR_DIRECTORY;
    }

    @Override
    public FormatOptions withCodec(FormatOptions options, String codec) {
        throw new IllegalArgumentException("full versions have no encodings, got '" + codec + "'");
    }

    @Override
    public VersionWriter newWriter(FormatOptions options, ChunkRunner runner) {
        throw new IllegalStateException("full versions have no transition to write");
    }

    @Override
    public ManifestFields manifestFields(WriteResult written, EncodedVersion encoded, Collection<TensorData> tensors) {
        return ManifestFields.of(id(), "auto").withTransitionWeights(allNames(tensors));
    }

    @Override
    public VersionPatches readPatches(VersionFiles files, Checkpoint local) {
        throw new IllegalStateException("a full version is loaded whole, not patched");
    }
}
