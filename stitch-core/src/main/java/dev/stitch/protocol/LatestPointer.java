package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * The board pointer {@code latest.json} (docs/protocol/board.md §1.1): the pair {@code (run, version)}
 * plus the publish time and, for {@code version > 0}, the digest of that version's manifest bytes.
 *
 * @param runId            the run, or null for a run-less board
 * @param version          the newest published version of the run (0 = base)
 * @param updatedAt        epoch seconds of the last move
 * @param manifestChecksum {@code xxh3-128:<hex>} of the manifest bytes, or null
 */
public record LatestPointer(String runId, long version, double updatedAt, String manifestChecksum) {

    /** Name of the pointer file at the board root. */
    public static final String FILE_NAME = "latest.json";

    /** The pointer of a board without {@code latest.json}. */
    public static final LatestPointer EMPTY = new LatestPointer(null, 0, 0.0, null);

    public LatestPointer {
        if (version < 0) {
            throw new IllegalArgumentException("a version is non-negative, got " + version);
        }
        if (runId != null && runId.isEmpty()) {
            throw new IllegalArgumentException("a run id is non-empty (use null for a run-less pointer)");
        }
        if (!Double.isFinite(updatedAt)) {
            throw new IllegalArgumentException("updated_at must be finite");
        }
    }

    /** Whether this pointer and {@code other} name the same run (null included). */
    public boolean sameRun(String other) {
        return Objects.equals(runId, other);
    }

    /** The JSON tree as written (extension keys only when set). */
    public ObjectNode toJson() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        if (manifestChecksum != null) {
            o.put("manifest_checksum", manifestChecksum);
        }
        o.put("protocol_version", Manifest.PROTOCOL_VERSION);
        if (runId != null) {
            o.put("run_id", runId);
        }
        o.put("updated_at", updatedAt);
        o.put("version", version);
        return o;
    }

    /** The canonical bytes of {@code latest.json}, trailing newline included. */
    public byte[] toBytes() {
        return CanonicalJson.toBytes(toJson());
    }

    /** Parses {@code latest.json} bytes; malformed content is a read error, never "version 0". */
    public static LatestPointer parse(byte[] bytes, String what) throws ProtocolException {
        JsonNode node = ProtocolJson.parse(bytes, what);
        if (!node.isObject()) {
            throw new ProtocolException(what + ": the pointer must be a JSON object");
        }
        ProtocolJson.checkProtocolVersion(node, what);
        Long version = ProtocolJson.lenientLong(node, "version", what);
        String run = ProtocolJson.optionalString(node, "run_id", what);
        if (run != null && run.isEmpty()) {
            throw new ProtocolException(what + ": empty run_id");
        }
        String checksum = ProtocolJson.optionalString(node, "manifest_checksum", what);
        return new LatestPointer(run, version == null ? 0 : version,
                ProtocolJson.lenientDouble(node, "updated_at", 0.0, what), checksum);
    }

    @Override
    public String toString() {
        return (runId == null ? "(no run)" : "run '" + runId + "'") + " version " + version;
    }
}
