package dev.stitch.bench.report;

import dev.stitch.format.DeltaFormat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Renders the JSON results of {@code stitch bench kernels|publish|proxy|simulate --json} into one
 * HTML page ({@code index.html}) with PNG charts beside it. Benchmarks whose file is missing get a
 * note instead of charts.
 */
public final class BenchReport {
    private static final double GIB = 1024.0 * 1024 * 1024;

    /** What was rendered: chart file names (relative to the output directory) and notes about skipped parts. */
    public record Summary(Path index, List<String> charts, List<String> notes) {
    }

    private final Path inDir;
    private final Path outDir;
    private final List<String> charts = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final StringBuilder html = new StringBuilder();

    private BenchReport(Path inDir, Path outDir) {
        this.inDir = inDir;
        this.outDir = outDir;
    }

    /** Reads {@code inDir/{kernels,publish,proxy,simulate}.json} (whichever exist) and writes the report into {@code outDir}. */
    public static Summary render(Path inDir, Path outDir) throws IOException {
        BenchInputs inputs = BenchInputs.read(inDir);
        Files.createDirectories(outDir);
        BenchReport r = new BenchReport(inDir, outDir);
        r.build(inputs);
        Path index = outDir.resolve("index.html");
        Path tmp = outDir.resolve("index.html.tmp");
        Files.writeString(tmp, r.html, StandardCharsets.UTF_8);
        Files.move(tmp, index, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return new Summary(index, List.copyOf(r.charts), List.copyOf(r.notes));
    }

    private void build(BenchInputs in) throws IOException {
        html.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stitch benchmark report</title>\n")
            .append("<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}")
            .append("table{border-collapse:collapse;font-size:12px;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}")
            .append("th{background:#f0f0f0}.note{color:#8a5a00}img{max-width:100%}</style></head><body>\n")
            .append("<h1>stitch benchmark report</h1>\n<p>Rendered ").append(Instant.now()).append(" from <code>")
            .append(esc(inDir.toAbsolutePath().normalize().toString())).append("</code>. Throughputs are GB/s of model bytes (10<sup>9</sup> B); ")
            .append("link rates are MB/s (10<sup>6</sup> B); bytes per GiB are per 2<sup>30</sup> B of model.</p>\n");
        kernels(in);
        publish(in);
        proxy(in);
        simulate(in);
        remote(in);
        fleet(in);
        html.append("</body></html>\n");
    }

    private void kernels(BenchInputs in) throws IOException {
        section("Kernels", "kernels");
        List<Map<String, Object>> rows = in.rows("kernels");
        if (rows == null) {
            return;
        }
        ChartSet.CategoryData floor = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            if ("floor".equals(r.get("kernel"))) {
                continue;
            }
            String label = BenchInputs.text(r, "kernel") + " " + BenchInputs.text(r, "impl") + " " + BenchInputs.text(r, "threads") + "t";
            floor.add(densityLabel(r), label, BenchInputs.number(r, "floor_fraction"));
        }
        chart("kernels-floor.png", floor.isEmpty() ? null : f -> ChartSet.bars(f, "Kernel throughput as a fraction of the memory-traffic floor",
                "kernel, implementation, threads", "fraction of floor", floor),
                "Each bar is a kernel's measured model throughput divided by the floor of docs/performance-targets.md §7.2 "
                + "(streaming read/fill bandwidth measured in the same run); 1.0 would be memory-bound perfection.");
        table(rows);
    }

    private void publish(BenchInputs in) throws IOException {
        section("Publish and host apply, per encoding", "publish");
        List<Map<String, Object>> rows = in.rows("publish");
        if (rows == null) {
            return;
        }
        ChartSet.XySeriesData encode = new ChartSet.XySeriesData();
        ChartSet.XySeriesData apply = new ChartSet.XySeriesData();
        ChartSet.CategoryData bytes = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            String series = encodingLabel(r);
            double density = BenchInputs.number(r, "density");
            double size = BenchInputs.number(r, "size_bytes");
            encode.add(series, density, size / BenchInputs.number(r, "encode_s") / 1e9);
            apply.add(series, density, BenchInputs.number(r, "apply_gbps_model"));
            if (!DeltaFormat.FULL.id().equals(r.get("backend"))) {
                bytes.add(densityLabel(r), series, BenchInputs.number(r, "bytes_written") / (size / GIB) / 1e6);
            }
        }
        chart("publish-encode.png", encode.isEmpty() ? null : f -> ChartSet.xy(f, "Encode throughput vs density",
                "density (fraction of elements changed)", "GB/s of model", encode, false, false),
                "Model bytes divided by encode time (diff, compression, checksums, format writing) for each backend/encoding.");
        chart("publish-apply.png", apply.isEmpty() ? null : f -> ChartSet.xy(f, "Host apply throughput vs density",
                "density (fraction of elements changed)", "GB/s of model", apply, false, false),
                "Model bytes divided by host-apply time (decode, scatter, per-tensor digest verification).");
        chart("publish-bytes.png", bytes.isEmpty() ? null : f -> ChartSet.bars(f, "Bytes on the board per GiB of model",
                "backend/encoding", "MB per GiB of model", bytes),
                "Bytes a version writes to the board per GiB of model, which is what crosses the link; "
                + "a full checkpoint (1073.7 MB per GiB) is left out so the deltas stay readable.");
        table(rows);
    }

    private void proxy(BenchInputs in) throws IOException {
        section("Proxy overhead", "proxy");
        List<Map<String, Object>> rows = in.rows("proxy");
        if (rows == null) {
            return;
        }
        ChartSet.CategoryData latency = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            double offered = BenchInputs.number(r, "rps_offered");
            String point = offered == 0 ? "saturation" : BenchInputs.text(r, "rps_offered") + " req/s";
            String path = BenchInputs.text(r, "path");
            latency.add(path + " p50", point, BenchInputs.number(r, "p50_ms"));
            latency.add(path + " p99", point, BenchInputs.number(r, "p99_ms"));
        }
        chart("proxy-latency.png", latency.isEmpty() ? null : f -> ChartSet.bars(f, "Request latency, direct vs through the sidecar",
                "offered load", "ms", latency),
                "p50 and p99 latency against the reference engine, directly and through the sidecar, at each offered rate.");
        table(rows);
    }

    private void simulate(BenchInputs in) throws IOException {
        section("Cross-datacenter time-to-serve", "simulate");
        List<Map<String, Object>> rows = in.rows("simulate");
        if (rows == null) {
            return;
        }
        // Prefer the extrapolated rows of the largest model: they are the figures the simulation is for.
        double largest = Double.NaN;
        boolean anyExtrapolated = false;
        for (Map<String, Object> r : rows) {
            anyExtrapolated |= Boolean.TRUE.equals(r.get("extrapolated"));
        }
        for (Map<String, Object> r : rows) {
            if (!anyExtrapolated || Boolean.TRUE.equals(r.get("extrapolated"))) {
                double p = BenchInputs.number(r, "model_params");
                largest = Double.isNaN(largest) ? p : Math.max(largest, p);
            }
        }
        ChartSet.XySeriesData link = new ChartSet.XySeriesData();
        ChartSet.CategoryData stages = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            if (anyExtrapolated && !Boolean.TRUE.equals(r.get("extrapolated"))) {
                continue;
            }
            if (BenchInputs.number(r, "model_params") != largest) {
                continue;
            }
            String series = simulateLabel(r) + " @" + densityLabel(r);
            link.add(series, BenchInputs.number(r, "link_mbps"), BenchInputs.number(r, "time_to_serve_s"));
        }
        double firstLink = Double.NaN;
        for (Map<String, Object> r : rows) {
            if ((anyExtrapolated == Boolean.TRUE.equals(r.get("extrapolated"))) && BenchInputs.number(r, "model_params") == largest) {
                double l = BenchInputs.number(r, "link_mbps");
                if (Double.isNaN(firstLink)) {
                    firstLink = l;
                }
                if (l == firstLink) {
                    String cat = simulateLabel(r);
                    stages.add("encode", cat, BenchInputs.number(r, "encode_s"));
                    stages.add("transfer", cat, BenchInputs.number(r, "transfer_s"));
                    stages.add("apply", cat, BenchInputs.number(r, "apply_s"));
                    stages.add("reload", cat, BenchInputs.number(r, "reload_s"));
                    stages.add("in-place apply", cat, BenchInputs.number(r, "in_place_apply_s"));
                    stages.add("time to serve", cat, BenchInputs.number(r, "time_to_serve_s"));
                    stages.add("sequential", cat, BenchInputs.number(r, "sequential_s"));
                }
            }
        }
        String what = (anyExtrapolated ? "extrapolated" : "measured") + " rows, "
                + String.format(Locale.ROOT, "%.3g", largest) + " parameters";
        chart("simulate-link.png", link.isEmpty() ? null : f -> ChartSet.xy(f, "Time to serve v+1 vs link speed (" + what + ")",
                "link MB/s", "seconds", link, true, true),
                "Trainer step end to first request servable at v+1, with encode, transfer and apply pipelined per chunk, "
                + "then one engine reload; engine-mode rows pipeline encode and transfer, then apply in place (" + what + ").");
        double shownLink = firstLink;
        chart("simulate-stages.png", stages.isEmpty() ? null : f -> ChartSet.bars(f,
                "Stage times at " + String.format(Locale.ROOT, "%.0f", shownLink) + " MB/s (" + what + ")",
                "backend/encoding", "seconds", stages),
                "Busy time of each stage, the pipelined time-to-serve, and the sum of the stages (sequential) for comparison.");
        table(rows);
    }

    private void remote(BenchInputs in) throws IOException {
        section("Remote board throughput", "remote");
        List<Map<String, Object>> rows = in.rows("remote");
        if (rows == null) {
            return;
        }
        ChartSet.CategoryData fraction = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            if (r.get("link_fraction") instanceof Number) {
                fraction.add(BenchInputs.text(r, "phase"), "v" + BenchInputs.text(r, "version"), BenchInputs.number(r, "link_fraction"));
            }
        }
        chart("remote-link.png", fraction.isEmpty() ? null : f -> ChartSet.bars(f, "Publish and fetch throughput / link rate",
                "version", "fraction of the link rate", fraction),
                "Bytes per second while uploading each version to the S3 board and while fetching it into a verified cache, "
                + "divided by the limited link's rate; 'all' is the total over the run.");
        table(rows);
    }

    private void fleet(BenchInputs in) throws IOException {
        section("Two-datacenter fleet", "fleet");
        List<Map<String, Object>> rows = in.rows("fleet");
        if (rows == null) {
            return;
        }
        ChartSet.CategoryData ratio = new ChartSet.CategoryData();
        ChartSet.CategoryData times = new ChartSet.CategoryData();
        for (Map<String, Object> r : rows) {
            if (!"all".equals(BenchInputs.text(r, "version"))) {
                continue;
            }
            String cache = "cache " + BenchInputs.text(r, "cache");
            ratio.add("link bytes / one copy", cache, BenchInputs.number(r, "link_bytes_ratio"));
            ratio.add("late joiner link bytes / its fetch", cache, BenchInputs.number(r, "late_joiner_link_ratio"));
            times.add("first host", cache, BenchInputs.number(r, "first_host_s"));
            times.add("last host", cache, BenchInputs.number(r, "last_host_s"));
            times.add("late joiner", cache, BenchInputs.number(r, "late_joiner_s"));
        }
        chart("fleet-link.png", ratio.isEmpty() ? null : f -> ChartSet.bars(f, "Bytes across the link per version, with and without the cache",
                "cache mode", "ratio", ratio),
                "What crossed the limited link per version divided by one copy of the version, and for a late joiner by "
                + "what it fetched; with the cache tier each version should cross once.");
        chart("fleet-times.png", times.isEmpty() ? null : f -> ChartSet.bars(f, "Pointer move to serving", "cache mode",
                "seconds", times),
                "Mean time from the trainer's pointer move to the first and the last host serving the version, and a late "
                + "joiner's time from start to serving the newest version.");
        table(rows);
    }

    @FunctionalInterface
    private interface ChartWriter {
        void write(Path file) throws IOException;
    }

    private void section(String title, String name) {
        html.append("<h2>").append(esc(title)).append("</h2>\n");
        if (!Files.isRegularFile(inDir.resolve(name + ".json"))) {
            String note = name + ".json not found in the input directory: " + title.toLowerCase(Locale.ROOT)
                    + " charts skipped (run 'stitch bench " + name + " --json " + name + ".json').";
            notes.add(note);
            html.append("<p class=\"note\">").append(esc(note)).append("</p>\n");
        }
    }

    private void chart(String fileName, ChartWriter writer, String caption) throws IOException {
        if (writer == null) {
            String note = fileName + " skipped: the input has no rows with the needed numbers.";
            notes.add(note);
            html.append("<p class=\"note\">").append(esc(note)).append("</p>\n");
            return;
        }
        writer.write(outDir.resolve(fileName));
        charts.add(fileName);
        html.append("<figure><img src=\"").append(esc(fileName)).append("\" alt=\"").append(esc(caption)).append("\">")
            .append("<figcaption>").append(esc(caption)).append("</figcaption></figure>\n");
    }

    private void table(List<Map<String, Object>> rows) {
        Set<String> keys = new LinkedHashSet<>();
        for (Map<String, Object> r : rows) {
            keys.addAll(r.keySet());
        }
        html.append("<table><tr>");
        for (String k : keys) {
            html.append("<th>").append(esc(k)).append("</th>");
        }
        html.append("</tr>\n");
        for (Map<String, Object> r : rows) {
            html.append("<tr>");
            for (String k : keys) {
                html.append("<td>").append(esc(cell(r.get(k)))).append("</td>");
            }
            html.append("</tr>\n");
        }
        html.append("</table>\n");
    }

    private static String cell(Object v) {
        if (v instanceof Double d) {
            if (d == Math.rint(d) && Math.abs(d) < 1e15) {
                return Long.toString(d.longValue());
            }
            return String.format(Locale.ROOT, Math.abs(d) >= 100 ? "%.1f" : Math.abs(d) >= 0.01 ? "%.4f" : "%.3e", d);
        }
        return v == null ? "-" : v.toString();
    }

    private static String encodingLabel(Map<String, Object> r) {
        String backend = BenchInputs.text(r, "backend");
        String encoding = BenchInputs.text(r, "encoding");
        return backend.equals(encoding) || "-".equals(encoding) ? backend : backend + "/" + encoding;
    }

    /** A simulate row's backend/encoding, marked when it is the engine-mode row beside the host-mode one. */
    private static String simulateLabel(Map<String, Object> r) {
        return "engine".equals(r.get("mode")) ? encodingLabel(r) + " (engine)" : encodingLabel(r);
    }

    private static String densityLabel(Map<String, Object> r) {
        double d = BenchInputs.number(r, "density");
        return Double.isNaN(d) ? "density ?" : String.format(Locale.ROOT, "%.3g%%", d * 100);
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
