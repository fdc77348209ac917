package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * A version's {@code manifest.json} (docs/protocol/board.md §1.2). Construction normalises the two file
 * lists the way upstream does: empty {@code transition_files} are rebuilt from the {@code transition}
 * artifacts, and empty {@code artifacts} are synthesised from {@code transition_files}.
 *
 * @param version           the version number (equals the directory's)
 * @param baseVersion       the version the transition starts from
 * @param backend           artifact family, e.g. {@code disk_delta}
 * @param loadFormat        SGLang load format, e.g. {@code delta}, {@code auto}, {@code noop}
 * @param transitionFiles   payload paths in apply order
 * @param artifacts         every listed file
 * @param createdAt         publish time, epoch seconds
 * @param deltaEncoding     encoding name, or null
 * @param compressionFormat {@code zstd}, or null
 * @param checksumFormat    per-tensor digest algorithm, or null
 * @param transitionWeights tensor names touched; empty = unknown
 * @param runId             the run, or null
 * @param baseModel         informational model name, or null
 * @param recovery          reserved, passed through untouched, or null
 * @param metadata          free-form object, or null when empty
 */
public record Manifest(long version, long baseVersion, String backend, String loadFormat,
                       List<String> transitionFiles, List<Artifact> artifacts, double createdAt,
                       String deltaEncoding, String compressionFormat, String checksumFormat,
                       List<String> transitionWeights, String runId, String baseModel,
                       JsonNode recovery, JsonNode metadata) {

    /** Name of the manifest file inside a version directory. */
    public static final String FILE_NAME = "manifest.json";
    /** The only protocol version this implementation reads and writes. */
    public static final int PROTOCOL_VERSION = 1;

    public Manifest {
        if (version < 0 || baseVersion < 0) {
            throw new IllegalArgumentException("versions are non-negative: version " + version + ", base " + baseVersion);
        }
        if (backend == null || loadFormat == null) {
            throw new IllegalArgumentException("backend and load_format are required");
        }
        if (!Double.isFinite(createdAt)) {
            throw new IllegalArgumentException("created_at must be finite");
        }
        artifacts = artifacts == null ? List.of() : List.copyOf(artifacts);
        transitionFiles = transitionFiles == null ? List.of() : List.copyOf(transitionFiles);
        transitionWeights = transitionWeights == null ? List.of() : List.copyOf(transitionWeights);
        if (transitionFiles.isEmpty()) {
            List<String> rebuilt = new ArrayList<>();
            for (Artifact a : artifacts) {
                if (a.is(ArtifactKind.TRANSITION)) {
                    rebuilt.add(a.path());
                }
            }
            transitionFiles = List.copyOf(rebuilt);
        } else if (artifacts.isEmpty()) {
            List<Artifact> synthesized = new ArrayList<>(transitionFiles.size());
            for (String p : transitionFiles) {
                synthesized.add(new Artifact(ArtifactKind.TRANSITION.wireName(), p, null, null, null));
            }
            artifacts = List.copyOf(synthesized);
        }
        for (String p : transitionFiles) {
            String bad = Artifact.pathProblem(p);
            if (bad != null) {
                throw new IllegalArgumentException("transition file: " + bad);
            }
        }
        if (metadata != null && (metadata.isNull() || (metadata.isObject() && metadata.isEmpty()))) {
            metadata = null;
        }
        if (metadata != null && !metadata.isObject()) {
            throw new IllegalArgumentException("manifest metadata must be an object");
        }
        if (recovery != null && recovery.isNull()) {
            recovery = null;
        }
    }

    /** Whether this version carries {@code full} artifacts (a complete checkpoint). */
    public boolean isAnchor() {
        for (Artifact a : artifacts) {
            if (a.is(ArtifactKind.FULL)) {
                return true;
            }
        }
        return false;
    }

    /** The artifacts of {@code kind}, in manifest order. */
    public List<Artifact> artifactsOf(ArtifactKind kind) {
        List<Artifact> out = new ArrayList<>();
        for (Artifact a : artifacts) {
            if (a.is(kind)) {
                out.add(a);
            }
        }
        return out;
    }

    /** The artifact listed at {@code path}, or null. */
    public Artifact artifact(String path) {
        for (Artifact a : artifacts) {
            if (a.path().equals(path)) {
                return a;
            }
        }
        return null;
    }

    /** A copy with {@code runId} set (the writer stamps the board's run). */
    public Manifest withRunId(String run) {
        return new Manifest(version, baseVersion, backend, loadFormat, transitionFiles, artifacts, createdAt,
                deltaEncoding, compressionFormat, checksumFormat, transitionWeights, run, baseModel, recovery, metadata);
    }

    /** The JSON tree as our writer emits it (optional keys only when set). */
    public ObjectNode toJson() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        ObjectNode o = f.objectNode();
        ArrayNode arts = o.putArray("artifacts");
        for (Artifact a : artifacts) {
            arts.add(a.toJson());
        }
        o.put("backend", backend);
        if (baseModel != null) {
            o.put("base_model", baseModel);
        }
        o.put("base_version", baseVersion);
        if (checksumFormat != null) {
            o.put("checksum_format", checksumFormat);
        }
        if (compressionFormat != null) {
            o.put("compression_format", compressionFormat);
        }
        o.put("created_at", createdAt);
        if (deltaEncoding != null) {
            o.put("delta_encoding", deltaEncoding);
        }
        o.put("load_format", loadFormat);
        if (metadata != null) {
            o.set("metadata", metadata.deepCopy());
        }
        o.put("protocol_version", PROTOCOL_VERSION);
        if (recovery != null) {
            o.set("recovery", recovery.deepCopy());
        }
        if (runId != null) {
            o.put("run_id", runId);
        }
        ArrayNode tf = o.putArray("transition_files");
        transitionFiles.forEach(tf::add);
        if (!transitionWeights.isEmpty()) {
            ArrayNode tw = o.putArray("transition_weights");
            transitionWeights.forEach(tw::add);
        }
        o.put("version", version);
        return o;
    }

    /** The canonical bytes of {@code manifest.json} (1.5), trailing newline included. */
    public byte[] toBytes() {
        return CanonicalJson.toBytes(toJson());
    }

    /** Parses manifest bytes; {@code what} names the file in error messages. */
    public static Manifest parse(byte[] bytes, String what) throws ProtocolException {
        return fromJson(ProtocolJson.parse(bytes, what), what);
    }

    /** Reads a manifest object (1.2): unknown keys ignored, numeric strings accepted, protocol_version checked. */
    public static Manifest fromJson(JsonNode node, String what) throws ProtocolException {
        if (!node.isObject()) {
            throw new ProtocolException(what + ": a manifest must be a JSON object");
        }
        ProtocolJson.checkProtocolVersion(node, what);
        Long version = ProtocolJson.lenientLong(node, "version", what);
        Long base = ProtocolJson.lenientLong(node, "base_version", what);
        if (version == null) {
            throw new ProtocolException(what + ": missing 'version'");
        }
        if (base == null) {
            throw new ProtocolException(what + ": missing 'base_version'");
        }
        String backend = ProtocolJson.optionalString(node, "backend", what);
        String loadFormat = ProtocolJson.optionalString(node, "load_format", what);
        List<Artifact> artifacts = Artifact.listFromJson(node.get("artifacts"), what);
        List<String> transitionFiles = stringList(node, "transition_files", what);
        for (String p : transitionFiles) {
            String bad = Artifact.pathProblem(p);
            if (bad != null) {
                throw new ProtocolException(what + ": transition file: " + bad);
            }
        }
        JsonNode metadata = node.get("metadata");
        if (metadata != null && !metadata.isNull() && !metadata.isObject()) {
            throw new ProtocolException(what + ": 'metadata' must be an object");
        }
        JsonNode recovery = node.get("recovery");
        return new Manifest(version, base,
                backend == null ? "sparse_delta" : backend,
                loadFormat == null ? "delta" : loadFormat,
                transitionFiles, artifacts,
                ProtocolJson.lenientDouble(node, "created_at", 0.0, what),
                ProtocolJson.optionalString(node, "delta_encoding", what),
                ProtocolJson.optionalString(node, "compression_format", what),
                ProtocolJson.optionalString(node, "checksum_format", what),
                stringList(node, "transition_weights", what),
                ProtocolJson.optionalString(node, "run_id", what),
                ProtocolJson.optionalString(node, "base_model", what),
                recovery == null ? null : recovery.deepCopy(),
                metadata == null ? null : metadata.deepCopy());
    }

    private static List<String> stringList(JsonNode node, String key, String what) throws ProtocolException {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) {
            return List.of();
        }
        if (!v.isArray()) {
            throw new ProtocolException(what + ": '" + key + "' must be an array of strings");
        }
        List<String> out = new ArrayList<>(v.size());
        for (JsonNode e : v) {
            if (!e.isTextual()) {
                throw new ProtocolException(what + ": '" + key + "' must hold strings, got " + e);
            }
            out.add(e.textValue());
        }
        return out;
    }
}
