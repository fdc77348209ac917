package dev.stitch.apply;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The local checkpoint's state file {@code <local>/.weight_sync/state.json} (docs/protocol/sync-and-engines.md §7.3):
 * the version the weight files hold, the run, the crash marker {@code applying}, the host boot id and
 * the base fingerprint. Keys this writer does not know are kept.
 *
 * @param version         the version the files hold (0 = the base)
 * @param runId           the run, or null
 * @param applying        the version being applied when the process stopped, or null
 * @param bootId          the host boot id when written, or null
 * @param baseFingerprint {@code sha256:<hex>} of the base checkpoint, or null
 * @param extra           other keys, in file order
 */
public record HostState(long version, String runId, Long applying, String bootId, String baseFingerprint, Map<String, JsonNode> extra) {

    private static final ObjectMapper JSON = new ObjectMapper();

    public HostState {
        extra = new LinkedHashMap<>(extra);
    }

    /** The state of a checkpoint without a state file: the base, any run. */
    public static HostState base() {
        return new HostState(0, null, null, null, null, Map.of());
    }

    public HostState withVersion(long v, String run) {
        return new HostState(v, run, null, currentBootId(), baseFingerprint, extra);
    }

    public HostState withApplying(Long v) {
        return new HostState(version, runId, v, currentBootId(), baseFingerprint, extra);
    }

    public HostState withBaseFingerprint(String fp) {
        return new HostState(version, runId, applying, bootId, fp, extra);
    }

    /**
     * Why the local files cannot be trusted for delta replay, or null when they can: a leftover
     * {@code applying} marker or another host boot (unsynced page-cache writes may be lost).
     */
    public String dirtyReason() {
        if (applying != null) {
            return "an apply of version " + applying + " was interrupted";
        }
        String now = currentBootId();
        if (bootId != null && now != null && !bootId.equals(now)) {
            return "the host rebooted since the state was written (boot id " + bootId + " → " + now + ")";
        }
        return null;
    }

    /** Reads the state file, or {@link #base()} when absent. Malformed files are an error. */
    public static HostState read(Path file) throws IOException {
        if (!Files.exists(file)) {
            return base();
        }
        JsonNode root;
        try {
            root = JSON.readTree(Files.readAllBytes(file));
        } catch (JsonProcessingException e) {
            throw new IOException(file + ": not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new IOException(file + ": not a JSON object");
        }
        Long version = versionOf(root.get("version"), file, "version");
        if (version == null) {
            throw new IOException(file + ": no version");
        }
        Long applying = versionOf(root.get("applying"), file, "applying");
        Map<String, JsonNode> extra = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            switch (e.getKey()) {
                case "version", "run_id", "applying", "boot_id", "base_fingerprint" -> {
                }
                default -> extra.put(e.getKey(), e.getValue());
            }
        }
        return new HostState(version, textOrNull(root.get("run_id")), applying, textOrNull(root.get("boot_id")),
            textOrNull(root.get("base_fingerprint")), extra);
    }

    private static Long versionOf(JsonNode n, Path file, String key) throws IOException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isIntegralNumber() && n.canConvertToLong() && n.longValue() >= 0) {
            return n.longValue();
        }
        if (n.isTextual()) {
            String t = n.textValue().strip();
            if (!t.isEmpty() && t.length() <= 18 && t.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return Long.parseLong(t);
            }
        }
        throw new IOException(file + ": " + key + " is not a version: " + n);
    }

    private static String textOrNull(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    /** The file's bytes: one JSON object, versions as {@code %06d} strings. */
    public byte[] toBytes() {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("version", String.format("%06d", version));
        o.put("run_id", runId);
        if (applying == null) {
            o.putNull("applying");
        } else {
            o.put("applying", String.format("%06d", applying));
        }
        o.put("boot_id", bootId);
        o.put("base_fingerprint", baseFingerprint);
        extra.forEach(o::set);
        try {
            return (JSON.writeValueAsString(o) + "\n").getBytes(StandardCharsets.UTF_8);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code /proc/sys/kernel/random/boot_id}, or null where the host has none. */
    public static String currentBootId() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
