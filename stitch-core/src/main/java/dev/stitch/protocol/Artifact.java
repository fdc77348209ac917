package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.hash.Hash128;
import java.util.ArrayList;
import java.util.List;

/**
 * One file of a version (docs/protocol/board.md §1.3). Size and checksum are optional on read (upstream
 * writers omit them) and always set by our writer.
 *
 * @param kind      the wire kind ({@code transition}, {@code transition_meta}, {@code full}, or an unknown one)
 * @param path      safe relative POSIX path inside the version directory
 * @param sizeBytes the file length, or null when not given
 * @param checksum  {@code xxh3-128:<hex>} or {@code sha256:<hex>}, or null when not given; validated when verified
 * @param metadata  free-form object, or null
 */
public record Artifact(String kind, String path, Long sizeBytes, String checksum, JsonNode metadata) {

    /** Prefix of our artifact and pointer digests. */
    public static final String XXH3_PREFIX = "xxh3-128:";
    /** Prefix of the alternative digest readers accept. */
    public static final String SHA256_PREFIX = "sha256:";

    public Artifact {
        if (kind == null || kind.isEmpty()) {
            throw new IllegalArgumentException("an artifact needs a kind");
        }
        String bad = pathProblem(path);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        if (sizeBytes != null && sizeBytes < 0) {
            throw new IllegalArgumentException("artifact " + path + ": negative size_bytes " + sizeBytes);
        }
    }

    /** An artifact as our writer records it: kind, path, size and xxh3-128 digest. */
    public static Artifact of(ArtifactKind kind, String path, long sizeBytes, Hash128 xxh3) {
        return new Artifact(kind.wireName(), path, sizeBytes, XXH3_PREFIX + xxh3.hex(), null);
    }

    /** The known kind, or null for an unknown one. */
    public ArtifactKind knownKind() {
        return ArtifactKind.fromWire(kind);
    }

    /** Whether this artifact is of {@code k}. */
    public boolean is(ArtifactKind k) {
        return k.wireName().equals(kind);
    }

    /**
     * Why {@code path} is not a safe artifact path, or null when it is: it must be a non-empty relative
     * POSIX path with no empty, {@code .} or {@code ..} segment and no backslash or NUL.
     */
    public static String pathProblem(String path) {
        if (path == null || path.isEmpty()) {
            return "artifact path is empty";
        }
        if (path.startsWith("/")) {
            return "artifact path '" + path + "' is absolute";
        }
        if (path.indexOf('\\') >= 0) {
            return "artifact path '" + path + "' contains a backslash";
        }
        if (path.indexOf('\0') >= 0) {
            return "artifact path contains a NUL character";
        }
        if (path.length() >= 2 && path.charAt(1) == ':' && Character.isLetter(path.charAt(0))) {
            return "artifact path '" + path + "' names a drive";
        }
        for (String seg : path.split("/", -1)) {
            if (seg.isEmpty()) {
                return "artifact path '" + path + "' has an empty segment";
            }
            if (seg.equals("..")) {
                return "artifact path '" + path + "' escapes its version directory";
            }
            if (seg.equals(".")) {
                return "artifact path '" + path + "' has a '.' segment";
            }
        }
        return null;
    }

    static Artifact fromJson(JsonNode node, String what) throws ProtocolException {
        if (!node.isObject()) {
            throw new ProtocolException(what + ": an artifact must be an object, got " + node);
        }
        String kind = ProtocolJson.optionalString(node, "kind", what);
        String path = ProtocolJson.optionalString(node, "path", what);
        if (kind == null || kind.isEmpty()) {
            throw new ProtocolException(what + ": artifact without 'kind'");
        }
        if (path == null) {
            throw new ProtocolException(what + ": artifact without 'path'");
        }
        String bad = pathProblem(path);
        if (bad != null) {
            throw new ProtocolException(what + ": " + bad);
        }
        Long size = ProtocolJson.lenientLong(node, "size_bytes", what + " artifact " + path);
        String checksum = ProtocolJson.optionalString(node, "checksum", what + " artifact " + path);
        JsonNode metadata = node.get("metadata");
        if (metadata != null && metadata.isNull()) {
            metadata = null;
        }
        if (metadata != null && !metadata.isObject()) {
            throw new ProtocolException(what + ": artifact " + path + " metadata must be an object");
        }
        return new Artifact(kind, path, size, checksum, metadata == null ? null : metadata.deepCopy());
    }

    ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        if (checksum != null) {
            o.put("checksum", checksum);
        }
        o.put("kind", kind);
        if (metadata != null) {
            o.set("metadata", metadata.deepCopy());
        }
        o.put("path", path);
        if (sizeBytes != null) {
            o.put("size_bytes", sizeBytes.longValue());
        }
        return o;
    }

    static List<Artifact> listFromJson(JsonNode arr, String what) throws ProtocolException {
        if (arr == null || arr.isNull()) {
            return List.of();
        }
        if (!arr.isArray()) {
            throw new ProtocolException(what + ": 'artifacts' must be an array");
        }
        List<Artifact> out = new ArrayList<>(arr.size());
        for (JsonNode a : arr) {
            out.add(fromJson(a, what));
        }
        return List.copyOf(out);
    }
}
