package dev.stitch.format.disk;

import dev.stitch.protocol.CanonicalJson;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormatException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code model.safetensors.index.json} of a disk_delta version (docs/formats/disk-delta.md §3.3).
 *
 * @param version        this version
 * @param baseVersion    the version it builds on ({@code version - 1})
 * @param encoding       xor or overwrite
 * @param compression    always {@code zstd}
 * @param checksumFormat per-tensor digest of the new bytes
 * @param weightMap      changed tensor name → delta file
 */
public record DiskDeltaIndex(long version, long baseVersion, ValueMode encoding, String compression, String checksumFormat,
                             Map<String, String> weightMap) {

    /** The fixed file name. */
    public static final String FILE = "model.safetensors.index.json";
    /** Largest index this reader loads. */
    static final long MAX_BYTES = 64L << 20;

    private static final ObjectMapper JSON = JsonMapper.builder().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).build();

    public DiskDeltaIndex {
        weightMap = Collections.unmodifiableMap(new LinkedHashMap<>(weightMap));
    }

    /** Whether {@code dir} holds a disk_delta index (an index with {@code delta_encoding}). */
    public static boolean isDelta(Path dir) throws IOException {
        Path p = dir.resolve(FILE);
        if (!Files.isRegularFile(p) || Files.size(p) > MAX_BYTES) {
            return false;
        }
        try {
            JsonNode root = JSON.readTree(Files.readAllBytes(p));
            return root != null && root.path("metadata").has("delta_encoding");
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    /** Reads and validates the index of a version directory. */
    public static DiskDeltaIndex read(Path dir) throws IOException {
        Path p = dir.resolve(FILE);
        if (!Files.isRegularFile(p)) {
            throw new DeltaFormatException(dir + ": no " + FILE);
        }
        if (Files.size(p) > MAX_BYTES) {
            throw new DeltaFormatException(p + ": larger than " + MAX_BYTES + " bytes");
        }
        return parse(Files.readAllBytes(p), p.toString());
    }

    /** Parses index bytes. */
    public static DiskDeltaIndex parse(byte[] bytes, String where) {
        JsonNode root;
        try {
            root = JSON.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw new DeltaFormatException(where + ": not valid JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new DeltaFormatException(where + ": unreadable: " + e.getMessage(), e);
        }
        if (root == null || !root.isObject() || !root.path("metadata").isObject() || !root.path("weight_map").isObject()) {
            throw new DeltaFormatException(where + ": needs a metadata object and a weight_map object");
        }
        JsonNode m = root.get("metadata");
        long version = versionField(m, "version", where);
        long base = versionField(m, "base_version", where);
        if (base != version - 1) {
            throw new DeltaFormatException(where + ": base_version " + base + " is not version - 1 (" + (version - 1) + ")");
        }
        String enc = text(m, "delta_encoding", where);
        ValueMode mode;
        if (enc.equals("xor")) {
            mode = ValueMode.XOR;
        } else if (enc.equals("overwrite")) {
            mode = ValueMode.OVERWRITE;
        } else {
            throw new DeltaFormatException(where + ": unknown delta_encoding '" + enc + "'");
        }
        String compression = text(m, "compression_format", where);
        if (!compression.equals("zstd")) {
            throw new DeltaFormatException(where + ": compression_format '" + compression + "' is not zstd");
        }
        String checksum = m.has("checksum_format") ? text(m, "checksum_format", where) : "xxh3-128";
        if (!checksum.equals("xxh3-128") && !checksum.equals("blake3") && !checksum.equals("adler32")) {
            throw new DeltaFormatException(where + ": unknown checksum_format '" + checksum + "'");
        }
        Map<String, String> map = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : root.get("weight_map").properties()) {
            if (!e.getValue().isTextual()) {
                throw new DeltaFormatException(where + ": weight_map value of '" + e.getKey() + "' is not a string");
            }
            String file = e.getValue().textValue();
            if (file.isEmpty() || file.contains("/") || file.contains("\\") || file.startsWith(".") || !file.endsWith(".safetensors")) {
                throw new DeltaFormatException(where + ": weight_map file '" + file + "' is not a plain *.safetensors name");
            }
            map.put(e.getKey(), file);
        }
        return new DiskDeltaIndex(version, base, mode, compression, checksum, map);
    }

    private static String text(JsonNode m, String key, String where) {
        JsonNode n = m.get(key);
        if (n == null || !n.isTextual()) {
            throw new DeltaFormatException(where + ": metadata." + key + " missing or not a string");
        }
        return n.textValue();
    }

    private static long versionField(JsonNode m, String key, String where) {
        String t = text(m, key, where).strip();
        if (t.isEmpty() || t.length() > 18 || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new DeltaFormatException(where + ": metadata." + key + " '" + t + "' is not a decimal version");
        }
        return Long.parseLong(t);
    }

    /** The index text our writer emits (Python {@code json.dumps} style, one line, no trailing newline). */
    public String toJson() {
        StringBuilder sb = new StringBuilder(256 + 96 * weightMap.size());
        sb.append("{\"metadata\": {\"version\": \"").append(formatVersion(version))
            .append("\", \"base_version\": \"").append(formatVersion(baseVersion))
            .append("\", \"delta_encoding\": \"").append(encoding.id())
            .append("\", \"compression_format\": \"").append(compression)
            .append("\", \"checksum_format\": \"").append(checksumFormat)
            .append("\"}, \"weight_map\": ");
        CanonicalJson.appendStringMap(sb, weightMap);
        return sb.append("}").toString();
    }

    /** {@code %06d}. */
    public static String formatVersion(long v) {
        return String.format("%06d", v);
    }
}
