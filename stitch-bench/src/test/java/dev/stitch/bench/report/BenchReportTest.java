package dev.stitch.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.bench.BenchResults;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchReportTest {

    private static final byte[] PNG_MAGIC = {(byte) 0x89, 'P', 'N', 'G'};

    @Test
    void rendersEveryChartFromSmallInputs(@TempDir Path dir) throws IOException {
        Path in = dir.resolve("in");
        writeKernels(in);
        writePublish(in);
        writeProxy(in);
        writeSimulate(in);
        writeRemote(in);
        writeFleet(in);
        Path out = dir.resolve("out");

        BenchReport.Summary s = BenchReport.render(in, out);

        assertEquals(List.of("kernels-floor.png", "publish-encode.png", "publish-apply.png", "publish-bytes.png",
                "proxy-latency.png", "simulate-link.png", "simulate-stages.png", "remote-link.png", "fleet-link.png",
                "fleet-times.png"), s.charts());
        assertTrue(s.notes().isEmpty(), s.notes().toString());
        String html = Files.readString(out.resolve("index.html"));
        for (String chart : s.charts()) {
            Path png = out.resolve(chart);
            assertTrue(Files.size(png) > 1000, chart + " is too small to be a chart");
            byte[] head = new byte[4];
            System.arraycopy(Files.readAllBytes(png), 0, head, 0, 4);
            assertTrue(java.util.Arrays.equals(PNG_MAGIC, head), chart + " is not a PNG");
            assertTrue(html.contains("<img src=\"" + chart + "\""), "index.html does not show " + chart);
        }
        // Every input row lands in a table.
        assertTrue(html.contains("<td>stitch_delta</td>"));
        assertTrue(html.contains("deltas_zstd"));
    }

    @Test
    void missingInputsAreSkippedWithANote(@TempDir Path dir) throws IOException {
        Path in = dir.resolve("in");
        writePublish(in);
        BenchReport.Summary s = BenchReport.render(in, dir.resolve("out"));

        assertEquals(List.of("publish-encode.png", "publish-apply.png", "publish-bytes.png"), s.charts());
        assertEquals(5, s.notes().size(), s.notes().toString());
        String html = Files.readString(dir.resolve("out/index.html"));
        assertTrue(html.contains("kernels.json not found"));
        assertTrue(html.contains("simulate.json not found"));
        assertFalse(Files.exists(dir.resolve("out/simulate-link.png")));
    }

    @Test
    void malformedInputIsAClearErrorAndWritesNothing(@TempDir Path dir) throws IOException {
        Path in = Files.createDirectories(dir.resolve("in"));
        Files.writeString(in.resolve("publish.json"), "{\"benchmark\": \"publish\", \"results\": [1, 2");
        IOException e = assertThrows(IOException.class, () -> BenchReport.render(in, dir.resolve("out")));
        assertTrue(e.getMessage().contains("publish.json"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("out/index.html")));

        Files.writeString(in.resolve("publish.json"), "{\"benchmark\": \"proxy\", \"results\": []}");
        e = assertThrows(IOException.class, () -> BenchReport.render(in, dir.resolve("out")));
        assertTrue(e.getMessage().contains("expected \"publish\""), e.getMessage());
    }

    @Test
    void htmlEscapesValuesFromTheInputs(@TempDir Path dir) throws IOException {
        Path in = dir.resolve("in");
        BenchResults r = new BenchResults("proxy");
        Map<String, Object> row = r.row();
        row.put("path", "<script>alert(1)</script>");
        row.put("rps_offered", 200);
        row.put("p50_ms", 0.4);
        row.put("p99_ms", 0.9);
        r.writeJson(in.resolve("proxy.json"));
        BenchReport.render(in, dir.resolve("out"));
        String html = Files.readString(dir.resolve("out/index.html"));
        assertFalse(html.contains("<script>"));
        assertTrue(html.contains("&lt;script&gt;"));
    }

    static void writeKernels(Path in) {
        BenchResults r = new BenchResults("kernels");
        for (double density : new double[] {0.01, 0.03, 0.1}) {
            for (String kernel : new String[] {"encode", "apply"}) {
                for (String impl : new String[] {"native", "java"}) {
                    for (int threads = 1; threads <= 2; threads++) {
                        Map<String, Object> row = r.row();
                        row.put("kernel", kernel);
                        row.put("impl", impl);
                        row.put("threads", threads);
                        row.put("density", density);
                        row.put("size_bytes", 64L << 20);
                        row.put("gbps_model", 2.0 + threads + (impl.equals("native") ? 1 : 0) - density);
                        row.put("floor_fraction", 0.4 + 0.1 * threads + (impl.equals("native") ? 0.2 : 0));
                    }
                }
            }
            Map<String, Object> floor = r.row();
            floor.put("kernel", "floor");
            floor.put("impl", "native");
            floor.put("threads", 1);
            floor.put("density", density);
            floor.put("size_bytes", 64L << 20);
            floor.put("gbps_model", 5.4);
            floor.put("floor_fraction", 1.0);
        }
        r.writeJson(in.resolve("kernels.json"));
    }

    static void writePublish(Path in) {
        BenchResults r = new BenchResults("publish");
        String[][] encodings = {{"sparse_delta", "indices"}, {"sparse_delta", "deltas"}, {"sparse_delta", "deltas_zstd"},
            {"disk_delta", "xor"}, {"disk_delta", "overwrite"}, {"stitch_delta", "xor"}, {"stitch_delta", "overwrite"}, {"full", "full"}};
        for (double density : new double[] {0.01, 0.03}) {
            int i = 0;
            for (String[] e : encodings) {
                i++;
                Map<String, Object> row = r.row();
                row.put("backend", e[0]);
                row.put("encoding", e[1]);
                row.put("density", density);
                row.put("size_bytes", 64L << 20);
                row.put("bytes_written", e[0].equals("full") ? 64L << 20 : (long) (density * (64L << 20) * i / 4));
                row.put("encode_s", 0.01 * i);
                row.put("publish_s", 0.012 * i);
                row.put("apply_s", 0.02 * i);
                row.put("apply_gbps_model", 3.0 / i);
            }
        }
        r.writeJson(in.resolve("publish.json"));
    }

    static void writeRemote(Path in) {
        BenchResults r = new BenchResults("remote");
        for (String phase : new String[] {"publish", "fetch"}) {
            for (String v : new String[] {"1", "2", "all"}) {
                Map<String, Object> row = r.row();
                row.put("phase", phase);
                row.put("version", v);
                row.put("bytes", 1000000);
                row.put("seconds", 0.05);
                row.put("link_fraction", phase.equals("publish") ? 0.85 : 0.92);
            }
        }
        r.writeJson(in.resolve("remote.json"));
    }

    static void writeFleet(Path in) {
        BenchResults r = new BenchResults("fleet");
        for (String cache : new String[] {"nginx", "none"}) {
            Map<String, Object> row = r.row();
            row.put("cache", cache);
            row.put("version", "all");
            row.put("link_bytes_ratio", cache.equals("nginx") ? 1.02 : 8.01);
            row.put("late_joiner_link_ratio", cache.equals("nginx") ? 1.0 : 1.0);
            row.put("first_host_s", 1.5);
            row.put("last_host_s", cache.equals("nginx") ? 1.7 : 9.5);
            row.put("late_joiner_s", 3.2);
            row.put("mislabeled", 0);
        }
        r.writeJson(in.resolve("fleet.json"));
    }

    static void writeProxy(Path in) {
        BenchResults r = new BenchResults("proxy");
        for (String path : new String[] {"direct", "sidecar"}) {
            for (int rps : new int[] {200, 1000, 0}) {
                Map<String, Object> row = r.row();
                row.put("path", path);
                row.put("rps_offered", rps);
                row.put("rps_achieved", rps == 0 ? 5000 : rps);
                row.put("p50_ms", path.equals("direct") ? 0.3 : 0.4);
                row.put("p99_ms", path.equals("direct") ? 0.8 : 1.1);
                row.put("errors", 0);
                if (path.equals("sidecar")) {
                    row.put("proxy_cpu_ms_per_req", 0.02);
                }
            }
        }
        r.writeJson(in.resolve("proxy.json"));
    }

    static void writeSimulate(Path in) {
        BenchResults r = new BenchResults("simulate");
        for (boolean extrapolated : new boolean[] {false, true}) {
            for (double link : new double[] {100, 300, 1000}) {
                for (String[] e : new String[][] {{"full", "full", "host"}, {"stitch_delta", "xor", "host"},
                    {"disk_delta", "xor", "host"}, {"sparse_delta", "deltas_zstd", "engine"}}) {
                    Map<String, Object> row = r.row();
                    row.put("backend", e[0]);
                    row.put("encoding", e[1]);
                    row.put("mode", e[2]);
                    row.put("model_params", extrapolated ? 70e9 : 134217728.0);
                    row.put("density", 0.03);
                    row.put("link_mbps", link);
                    double transfer = (e[0].equals("full") ? 140e9 : 4.5e9) / (link * 1e6);
                    row.put("encode_s", 5.0);
                    row.put("transfer_s", transfer);
                    boolean engine = e[2].equals("engine");
                    row.put("apply_s", engine ? 0.0 : 4.0);
                    row.put("reload_s", engine ? 0.0 : 30.0);
                    row.put("in_place_apply_s", engine ? 12.0 : 0.0);
                    row.put("slowest_stage_s", Math.max(5.0, transfer));
                    row.put("time_to_serve_s", Math.max(5.0, transfer) + 1 + 30);
                    row.put("sequential_s", 5 + 4 + transfer + 30);
                    row.put("extrapolated", extrapolated);
                }
            }
        }
        r.writeJson(in.resolve("simulate.json"));
    }
}
