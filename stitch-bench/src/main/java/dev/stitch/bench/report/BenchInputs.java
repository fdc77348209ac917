package dev.stitch.bench.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON documents of one benchmark run ({@code {"benchmark": name, "results": [row, ...]}}),
 * read from a directory by their conventional file names; a missing file is remembered as missing,
 * a malformed one is an error naming the file.
 */
final class BenchInputs {
    /** Files the report knows, in the order it shows them. */
    static final List<String> NAMES = List.of("kernels", "publish", "proxy", "simulate", "remote", "fleet");

    /** Hard limit on an input file, so a wrong path cannot make the report read gigabytes. */
    private static final long MAX_BYTES = 64L * 1024 * 1024;

    private final Map<String, List<Map<String, Object>>> results = new LinkedHashMap<>();

    private BenchInputs() {
    }

    static BenchInputs read(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("input directory " + dir + " does not exist");
        }
        BenchInputs in = new BenchInputs();
        for (String name : NAMES) {
            Path file = dir.resolve(name + ".json");
            if (Files.isRegularFile(file)) {
                in.results.put(name, parse(file, name));
            }
        }
        return in;
    }

    /** Rows of benchmark {@code name}, or null when its file was absent. */
    List<Map<String, Object>> rows(String name) {
        return results.get(name);
    }

    boolean has(String name) {
        return results.containsKey(name);
    }

    static List<Map<String, Object>> parse(Path file, String expected) throws IOException {
        long size = Files.size(file);
        if (size > MAX_BYTES) {
            throw new IOException(file + " is " + size + " bytes, more than a benchmark result file can be");
        }
        JsonNode doc;
        try {
            doc = new ObjectMapper().readTree(Files.readAllBytes(file));
        } catch (JsonProcessingException e) {
            throw new IOException(file + " is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (doc == null || !doc.isObject()) {
            throw new IOException(file + " must hold a JSON object {\"benchmark\": ..., \"results\": [...]}");
        }
        JsonNode name = doc.get("benchmark");
        if (name == null || !name.isTextual() || !name.asText().equals(expected)) {
            throw new IOException(file + " has \"benchmark\": " + name + ", expected \"" + expected + "\"");
        }
        JsonNode rows = doc.get("results");
        if (rows == null || !rows.isArray()) {
            throw new IOException(file + " has no \"results\" array");
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (JsonNode row : rows) {
            if (!row.isObject()) {
                throw new IOException(file + ": every result must be a JSON object, found " + row.getNodeType());
            }
            Map<String, Object> flat = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> e : row.properties()) {
                JsonNode v = e.getValue();
                flat.put(e.getKey(), v.isNumber() ? (Object) v.doubleValue()
                        : v.isBoolean() ? (Object) v.booleanValue()
                        : v.isNull() ? null
                        : v.isTextual() ? v.asText() : v.toString());
            }
            out.add(Collections.unmodifiableMap(flat));
        }
        return Collections.unmodifiableList(out);
    }

    /** The row's value as a finite number, or NaN when it is absent or not a number. */
    static double number(Map<String, Object> row, String key) {
        Object v = row.get(key);
        if (v instanceof Number n && Double.isFinite(n.doubleValue())) {
            return n.doubleValue();
        }
        return Double.NaN;
    }

    /** The row's value as text, or {@code "-"} when absent. */
    static String text(Map<String, Object> row, String key) {
        Object v = row.get(key);
        if (v == null) {
            return "-";
        }
        if (v instanceof Double d && Double.isFinite(d) && d == Math.rint(d) && Math.abs(d) < 1e15) {
            return Long.toString(d.longValue());
        }
        return v.toString();
    }
}
