package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Lifts a foreign-layout version's {@code model.safetensors.index.json} to a manifest
 * (docs/protocol/board.md §3): a slime disk_delta index (it has {@code metadata.delta_encoding}) becomes
 * a {@code disk_delta} transition, anything else a {@code full} checkpoint.
 */
public final class SlimeIndex {
    /** The index file name, fixed by HF and slime. */
    public static final String FILE_NAME = "model.safetensors.index.json";

    private SlimeIndex() {
    }

    /**
     * Builds the manifest of the version in directory {@code directoryVersion}.
     *
     * @param index            the parsed index
     * @param runId            the pointer's run, or null
     * @param directoryVersion the version named by the directory
     * @param safetensorsFiles the {@code *.safetensors} files at the directory root (used for full checkpoints)
     */
    public static Manifest toManifest(JsonNode index, String runId, long directoryVersion, List<String> safetensorsFiles)
            throws ProtocolException {
        String what = WeightIdentity.format(directoryVersion) + "/" + FILE_NAME;
        if (!index.isObject()) {
            throw new ProtocolException(what + ": the index must be a JSON object");
        }
        JsonNode metadata = index.path("metadata");
        if (!metadata.isMissingNode() && !metadata.isNull() && !metadata.isObject()) {
            throw new ProtocolException(what + ": 'metadata' must be an object");
        }
        JsonNode weightMap = index.path("weight_map");
        if (!weightMap.isMissingNode() && !weightMap.isNull() && !weightMap.isObject()) {
            throw new ProtocolException(what + ": 'weight_map' must be an object");
        }
        Long version = metadata.isObject() ? ProtocolJson.lenientLong(metadata, "version", what) : null;
        Long base = metadata.isObject() ? ProtocolJson.lenientLong(metadata, "base_version", what) : null;
        long v = version == null ? directoryVersion : version;
        if (v != directoryVersion) {
            throw new ProtocolException(what + ": says version " + v + ", its directory is version " + directoryVersion);
        }
        long b = base == null ? Math.max(0, v - 1) : base;
        String encoding = metadata.isObject() ? ProtocolJson.optionalString(metadata, "delta_encoding", what) : null;
        if (encoding != null) {
            TreeSet<String> files = new TreeSet<>();
            TreeSet<String> names = new TreeSet<>();
            if (weightMap.isObject()) {
                for (Map.Entry<String, JsonNode> e : weightMap.properties()) {
                    if (!e.getValue().isTextual()) {
                        throw new ProtocolException(what + ": weight_map['" + e.getKey() + "'] must be a file name");
                    }
                    String bad = Artifact.pathProblem(e.getValue().textValue());
                    if (bad != null) {
                        throw new ProtocolException(what + ": " + bad);
                    }
                    names.add(e.getKey());
                    files.add(e.getValue().textValue());
                }
            }
            List<Artifact> artifacts = new ArrayList<>(files.size());
            for (String f : files) {
                artifacts.add(new Artifact(ArtifactKind.TRANSITION.wireName(), f, null, null, null));
            }
            return new Manifest(v, b, "disk_delta", "auto", new ArrayList<>(files), artifacts, 0.0, encoding,
                    ProtocolJson.optionalString(metadata, "compression_format", what),
                    ProtocolJson.optionalString(metadata, "checksum_format", what),
                    new ArrayList<>(names), runId, null, null, null);
        }
        TreeSet<String> files = new TreeSet<>(safetensorsFiles);
        files.add(FILE_NAME);
        List<Artifact> artifacts = new ArrayList<>(files.size());
        for (String f : files) {
            artifacts.add(new Artifact(ArtifactKind.FULL.wireName(), f, null, null, null));
        }
        return new Manifest(v, b, "full", "auto", List.of(), artifacts, 0.0, null, null, null, List.of(), runId,
                null, null, null);
    }
}
