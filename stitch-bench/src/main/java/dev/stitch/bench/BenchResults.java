package dev.stitch.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Rows of one benchmark run: printed as an aligned table and written as
 * {@code {"benchmark": name, "results": [row, ...]}} (docs/protocol/cli-and-config.md §10.3). Rows are flat;
 * numbers stay JSON numbers.
 */
public final class BenchResults {
    private final String benchmark;
    private final List<Map<String, Object>> rows = new ArrayList<>();

    public BenchResults(String benchmark) {
        this.benchmark = benchmark;
    }

    public String benchmark() {
        return benchmark;
    }

    /** Starts a row; keys keep insertion order, which is also the table's column order. */
    public Map<String, Object> row() {
        Map<String, Object> r = new LinkedHashMap<>();
        rows.add(r);
        return r;
    }

    public List<Map<String, Object>> rows() {
        return rows;
    }

    /** Prints the given columns (all columns of the first row when none are given). */
    public void printTable(PrintStream out, String... columns) {
        List<String> cols = columns.length > 0 ? List.of(columns)
                : rows.isEmpty() ? List.of() : List.copyOf(rows.getFirst().keySet());
        List<String[]> cells = new ArrayList<>();
        cells.add(cols.toArray(String[]::new));
        for (Map<String, Object> r : rows) {
            String[] line = new String[cols.size()];
            for (int i = 0; i < cols.size(); i++) {
                line[i] = format(r.get(cols.get(i)));
            }
            cells.add(line);
        }
        int[] widths = new int[cols.size()];
        for (String[] line : cells) {
            for (int i = 0; i < line.length; i++) {
                widths[i] = Math.max(widths[i], line[i].length());
            }
        }
        for (String[] line : cells) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < line.length; i++) {
                if (i > 0) {
                    sb.append("  ");
                }
                sb.append(String.format(Locale.ROOT, "%" + widths[i] + "s", line[i]));
            }
            out.println(sb.toString().stripTrailing());
        }
    }

    /** Writes the JSON document; parent directories are created. */
    public void writeJson(Path file) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("benchmark", benchmark);
        doc.put("results", rows);
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), doc);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    private static String format(Object v) {
        if (v == null) {
            return "-";
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (d != 0 && Math.abs(d) < 0.001) {
                return String.format(Locale.ROOT, "%.2e", d);
            }
            return String.format(Locale.ROOT, Math.abs(d) >= 100 ? "%.1f" : "%.3f", d);
        }
        return v.toString();
    }
}
