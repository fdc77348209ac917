package dev.stitch.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A parsed and validated safetensors header: the {@code __metadata__} map (member order kept) and
 * the tensors in data order. Validation follows docs/formats/common.md §0.2: bounded header length,
 * well-formed JSON, known dtypes, unique names, {@code end - begin == numel * width} and offsets
 * that tile the data section exactly.
 *
 * @param metadata     string to string, in file order; empty when the member is absent
 * @param tensors      tensors sorted by data offset
 * @param headerLength {@code N}, the JSON length including padding
 * @param dataLength   bytes of the data section
 */
public record SafetensorsHeader(Map<String, String> metadata, List<TensorEntry> tensors, long headerLength, long dataLength) {

    /** The reference reader's limit on {@code N}. */
    public static final long MAX_HEADER_LENGTH = 100_000_000L;

    static final ObjectMapper JSON = JsonMapper.builder()
        .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
        .build();

    public SafetensorsHeader {
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        tensors = List.copyOf(tensors);
    }

    /** Offset of the data section from the start of the file. */
    public long dataStart() {
        return 8 + headerLength;
    }

    /** Total file size this header describes. */
    public long fileLength() {
        return dataStart() + dataLength;
    }

    /** The entry of {@code name}, or null. */
    public TensorEntry entry(String name) {
        for (TensorEntry e : tensors) {
            if (e.name().equals(name)) {
                return e;
            }
        }
        return null;
    }

    /** Entries keyed by name, in data order. */
    public Map<String, TensorEntry> byName() {
        Map<String, TensorEntry> m = new LinkedHashMap<>();
        for (TensorEntry e : tensors) {
            m.put(e.name(), e);
        }
        return m;
    }

    /**
     * Parses header JSON bytes and checks them against a data section of {@code dataLength} bytes.
     *
     * @param json       the {@code N} header bytes (trailing space padding allowed)
     * @param dataLength bytes that follow the header in the container
     * @param where      names the container in error messages
     */
    public static SafetensorsHeader parse(byte[] json, long dataLength, String where) {
        if (json.length > MAX_HEADER_LENGTH) {
            throw new SafetensorsFormatException(where + ": header of " + json.length + " bytes exceeds " + MAX_HEADER_LENGTH);
        }
        JsonNode root;
        try {
            root = JSON.readTree(new String(json, StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw new SafetensorsFormatException(where + ": header is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new SafetensorsFormatException(where + ": header is not a JSON object");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        List<TensorEntry> entries = new ArrayList<>();
        Iterator<Map.Entry<String, JsonNode>> fields = root.properties().iterator();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> f = fields.next();
            String name = f.getKey();
            JsonNode v = f.getValue();
            if (name.equals("__metadata__")) {
                if (!v.isObject()) {
                    throw new SafetensorsFormatException(where + ": __metadata__ is not an object");
                }
                Iterator<Map.Entry<String, JsonNode>> m = v.properties().iterator();
                while (m.hasNext()) {
                    Map.Entry<String, JsonNode> kv = m.next();
                    if (!kv.getValue().isTextual()) {
                        throw new SafetensorsFormatException(where + ": __metadata__ value of '" + kv.getKey() + "' is not a string");
                    }
                    metadata.put(kv.getKey(), kv.getValue().textValue());
                }
                continue;
            }
            entries.add(parseEntry(name, v, where));
        }
        List<TensorEntry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong(TensorEntry::begin).thenComparingLong(TensorEntry::end));
        long cursor = 0;
        for (TensorEntry e : sorted) {
            if (e.begin() != cursor) {
                throw new SafetensorsFormatException(where + ": tensor '" + e.name() + "' starts at " + e.begin()
                    + " but the previous data ends at " + cursor + (e.begin() > cursor ? " (gap)" : " (overlap)"));
            }
            cursor = e.end();
        }
        if (cursor != dataLength) {
            throw new SafetensorsFormatException(where + ": tensors cover " + cursor + " data bytes but the data section has "
                + dataLength + (cursor < dataLength ? " (trailing bytes)" : " (truncated)"));
        }
        return new SafetensorsHeader(metadata, sorted, json.length, dataLength);
    }

    private static TensorEntry parseEntry(String name, JsonNode v, String where) {
        if (!v.isObject()) {
            throw new SafetensorsFormatException(where + ": entry '" + name + "' is not an object");
        }
        Set<String> keys = new HashSet<>();
        v.fieldNames().forEachRemaining(keys::add);
        if (!keys.equals(Set.of("dtype", "shape", "data_offsets"))) {
            throw new SafetensorsFormatException(where + ": entry '" + name + "' must have exactly dtype, shape, data_offsets; has " + keys);
        }
        JsonNode dt = v.get("dtype");
        if (!dt.isTextual()) {
            throw new SafetensorsFormatException(where + ": dtype of '" + name + "' is not a string");
        }
        Dtype dtype;
        try {
            dtype = Dtype.fromSafetensors(dt.textValue());
        } catch (IllegalArgumentException e) {
            throw new SafetensorsFormatException(where + ": tensor '" + name + "': " + e.getMessage(), e);
        }
        long[] shape = longArray(v.get("shape"), "shape", name, where);
        long[] offsets = longArray(v.get("data_offsets"), "data_offsets", name, where);
        if (offsets.length != 2) {
            throw new SafetensorsFormatException(where + ": data_offsets of '" + name + "' must have two entries");
        }
        if (offsets[1] < offsets[0]) {
            throw new SafetensorsFormatException(where + ": data_offsets of '" + name + "' end before they begin");
        }
        TensorSpec spec = new TensorSpec(name, dtype, shape);
        long expected;
        try {
            expected = spec.byteLength();
        } catch (ArithmeticException e) {
            throw new SafetensorsFormatException(where + ": shape of '" + name + "' overflows", e);
        }
        if (offsets[1] - offsets[0] != expected) {
            throw new SafetensorsFormatException(where + ": tensor '" + name + "' has " + (offsets[1] - offsets[0])
                + " bytes but " + dtype + " x " + java.util.Arrays.toString(shape) + " needs " + expected);
        }
        return new TensorEntry(spec, offsets[0], offsets[1]);
    }

    private static long[] longArray(JsonNode n, String what, String name, String where) {
        if (n == null || !n.isArray()) {
            throw new SafetensorsFormatException(where + ": " + what + " of '" + name + "' is not an array");
        }
        long[] out = new long[n.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode x = n.get(i);
            if (!x.isIntegralNumber() || !x.canConvertToLong() || x.longValue() < 0) {
                throw new SafetensorsFormatException(where + ": " + what + " of '" + name + "' holds a non-integer or negative value " + x);
            }
            out[i] = x.longValue();
        }
        return out;
    }
}
