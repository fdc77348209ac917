package dev.stitch.format;

import dev.stitch.board.ManifestFields;
import dev.stitch.digest.Digests;
import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.disk.DiskDeltaIndex;
import dev.stitch.format.disk.DiskDeltaVersion;
import dev.stitch.format.disk.DiskDeltaWriter;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** {@link DeltaFormat#DISK_DELTA}: slime v2 per-tensor xor or overwrite files (docs/formats/disk-delta.md §3). */
final class DiskDeltaBackend extends DeltaFormat {

    DiskDeltaBackend() {
        super("disk_delta");
    }

    @Override
    public FullFallback fullFallback() {
        return FullFallback.VERSION_DIRECTORY;
    }

    @Override
    public boolean recordsNewDigests() {
        return true;
    }

    @Override
    public FormatOptions withCodec(FormatOptions options, String codec) {
        return options.withDiskEncoding(ValueMode.parse(codec));
    }

    @Override
    public String valueMode(FormatOptions options) {
        return options.diskEncoding().id();
    }

    @Override
    public VersionWriter newWriter(FormatOptions options, ChunkRunner runner) {
        return new DiskDeltaWriter(options.diskEncoding(), options.maxFileBytes());
    }

    @Override
    public ManifestFields manifestFields(WriteResult written, EncodedVersion encoded, Collection<TensorData> tensors) {
        return ManifestFields.of(id(), "auto")
                .withCodec(written.deltaEncoding(), "zstd", Digests.XXH3_128)
                .withTransitionWeights(changedNames(encoded));
    }

    @Override
    public List<String> metaFiles() {
        return List.of(DiskDeltaIndex.FILE);
    }

    @Override
    public VersionPatches readPatches(VersionFiles files, Checkpoint local) throws IOException {
        DiskDeltaVersion dv = DiskDeltaVersion.read(files.directory(), local::spec);
        if (dv.index().version() != files.version()) {
            throw new DeltaFormatException(files.directory() + ": index says version " + dv.index().version()
                    + ", expected " + files.version());
        }
        Map<String, List<TensorPatch>> byName = new TreeMap<>();
        for (TensorPatch p : dv.patches()) {
            byName.computeIfAbsent(p.name(), k -> new ArrayList<>()).add(p);
        }
        return new VersionPatches(byName, List.of());
    }
}
