package dev.stitch.format.full;

import dev.stitch.protocol.CanonicalJson;
import dev.stitch.encode.TensorData;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a complete Hugging Face checkpoint (docs/formats/anchors-and-fallback.md §5): one {@code model.safetensors} when
 * everything fits one shard, else 1-based {@code model-%05d-of-%05d.safetensors} shards plus an index
 * without {@code delta_encoding}. Each shard is streamed: header, then every tensor's bytes straight
 * from its segment.
 */
public final class FullCheckpointWriter {

    /** Subdirectory of an anchor inside a stitch-layout version directory. */
    public static final String ANCHOR_DIR = "full";
    /** Hugging Face's usual shard size. */
    public static final long DEFAULT_MAX_SHARD_BYTES = 5_000_000_000L;

    private final long maxShardBytes;
    private final Map<String, String> metadata;
    private final boolean alwaysIndexed;

    /**
     * @param maxShardBytes split point between shards
     * @param metadata      {@code __metadata__} of every shard (e.g. {@code format: pt})
     */
    public FullCheckpointWriter(long maxShardBytes, Map<String, String> metadata) {
        this(maxShardBytes, metadata, false);
    }

    private FullCheckpointWriter(long maxShardBytes, Map<String, String> metadata, boolean alwaysIndexed) {
        if (maxShardBytes <= 0) {
            throw new IllegalArgumentException("maxShardBytes must be positive");
        }
        this.maxShardBytes = maxShardBytes;
        this.metadata = new LinkedHashMap<>(metadata);
        this.alwaysIndexed = alwaysIndexed;
    }

    /**
     * This writer, but writing numbered shards and the index even when one shard holds everything:
     * readers that tell a full version from a delta by its index (slime v2, docs/formats/disk-delta.md §3.3, 3.5)
     * then find one.
     */
    public FullCheckpointWriter alwaysIndexed() {
        return new FullCheckpointWriter(maxShardBytes, metadata, true);
    }

    /** 5 GB shards with {@code {"format": "pt"}} metadata. */
    public static FullCheckpointWriter defaults() {
        return new FullCheckpointWriter(DEFAULT_MAX_SHARD_BYTES, Map.of("format", "pt"));
    }

    /**
     * Writes {@code tensors} under {@code dir/subdir} (subdir {@code "full"} for anchors, {@code ""} to
     * write into {@code dir} itself); returned paths are relative to {@code dir} and of kind {@code full}.
     */
    public WriteResult write(List<TensorData> tensors, Path dir, String subdir) throws IOException {
        long t0 = System.nanoTime();
        String prefix = subdir.isEmpty() ? "" : subdir + "/";
        List<TensorData> sorted = new ArrayList<>(tensors);
        sorted.sort(Comparator.comparing(TensorData::name, SafetensorsWriter.NAME_ORDER));
        List<List<TensorData>> shards = new ArrayList<>();
        List<TensorData> cur = new ArrayList<>();
        long curBytes = 0;
        long total = 0;
        for (TensorData t : sorted) {
            long n = t.spec().byteLength();
            if (!cur.isEmpty() && curBytes + n > maxShardBytes) {
                shards.add(cur);
                cur = new ArrayList<>();
                curBytes = 0;
            }
            cur.add(t);
            curBytes += n;
            total += n;
        }
        if (!cur.isEmpty() || shards.isEmpty()) {
            shards.add(cur);
        }
        boolean indexed = alwaysIndexed || shards.size() > 1;
        List<WrittenFile> files = new ArrayList<>();
        Map<String, String> weightMap = new TreeMap<>(SafetensorsWriter.NAME_ORDER);
        long written = 0;
        for (int i = 0; i < shards.size(); i++) {
            String name = !indexed ? Checkpoint.SINGLE : String.format("model-%05d-of-%05d.safetensors", i + 1, shards.size());
            List<TensorSpec> specs = new ArrayList<>();
            Map<String, MemorySegment> data = new HashMap<>();
            for (TensorData t : shards.get(i)) {
                specs.add(t.spec());
                data.put(t.name(), t.bytes());
                weightMap.put(t.name(), name);
            }
            SafetensorsWriter.Layout layout = SafetensorsWriter.layout(metadata, specs);
            WrittenFile wf = FormatFiles.write(dir, prefix + name, ArtifactKind.FULL, out -> SafetensorsWriter.write(out, layout, data::get));
            files.add(wf);
            written += wf.size();
        }
        if (indexed) {
            StringBuilder sb = new StringBuilder("{\"metadata\": {\"total_size\": ").append(total).append("}, \"weight_map\": ");
            CanonicalJson.appendStringMap(sb, weightMap);
            byte[] index = sb.append("}").toString().getBytes(StandardCharsets.UTF_8);
            WrittenFile wf = FormatFiles.write(dir, prefix + Checkpoint.INDEX, ArtifactKind.FULL, out -> out.write(index));
            files.add(wf);
            written += wf.size();
        }
        return new WriteResult(files, null, total, written, System.nanoTime() - t0);
    }
}
