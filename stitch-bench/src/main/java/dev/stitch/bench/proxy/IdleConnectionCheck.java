package dev.stitch.bench.proxy;

import dev.stitch.bench.BenchResults;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The idle-connection check of {@code stitch bench proxy --idle-connections N} (security.md,
 * "Limits"): N idle connections are opened to the sidecar by {@link IdleConnectionHolder} children,
 * then {@code /health} and a pinned {@code /generate} are timed on fresh connections while they are
 * held. The figures show whether idle sockets can lock clients out; the target is under 1 s each.
 */
final class IdleConnectionCheck {
    private static final int PER_HOLDER = 9_000;
    private static final Pattern OPENED = Pattern.compile("opened (\\d+) failed (\\d+)(.*)");
    private static final String PINNED = "{\"text\":\"idle check\",\"sampling_params\":{\"max_new_tokens\":1},"
            + "\"weight_version\":{\"exact_version\":0}}";

    private final int port;
    private final int idleConnections;
    private final int samples;

    IdleConnectionCheck(int port, int idleConnections, int samples) {
        this.port = port;
        this.idleConnections = idleConnections;
        this.samples = samples;
    }

    void run(BenchResults results) throws IOException, InterruptedException {
        List<Process> holders = new ArrayList<>();
        try {
            long t0 = System.nanoTime();
            int opened = 0;
            int failed = 0;
            for (int left = idleConnections; left > 0; left -= PER_HOLDER) {
                holders.add(startHolder(Math.min(left, PER_HOLDER)));
            }
            for (Process p : holders) {
                String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))
                        .readLine();
                Matcher m = line == null ? null : OPENED.matcher(line);
                if (m == null || !m.matches()) {
                    throw new IOException("an idle-connection holder failed: " + line);
                }
                opened += Integer.parseInt(m.group(1));
                failed += Integer.parseInt(m.group(2));
                if (!m.group(3).isBlank()) {
                    ProxyBenchCommand.progress("holder:" + m.group(3));
                }
            }
            double openS = (System.nanoTime() - t0) / 1e9;
            ProxyBenchCommand.progress(String.format("%d idle connections opened (%d failed) in %.1f s",
                    opened, failed, openS));
            double[] health = new double[samples];
            double[] pinned = new double[samples];
            int errors = 0;
            for (int i = 0; i < samples; i++) {
                health[i] = timed("GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n");
                pinned[i] = timed("POST /generate HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
                        + "Content-Type: application/json\r\nContent-Length: "
                        + PINNED.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + PINNED);
                errors += (health[i] < 0 ? 1 : 0) + (pinned[i] < 0 ? 1 : 0);
            }
            String metrics = new String(fetch("GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"),
                    StandardCharsets.UTF_8);
            row(results, "idle+health", opened, failed, health, metrics);
            row(results, "idle+pinned", opened, failed, pinned, metrics);
            results.rows().getLast().put("errors", errors);
        } finally {
            for (Process p : holders) {
                p.getOutputStream().close();
                p.destroy();
            }
        }
    }

    private Process startHolder(int count) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        return new ProcessBuilder(java, "-Xmx256m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
                IdleConnectionHolder.class.getName(), "127.0.0.1", Integer.toString(port), Integer.toString(count))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /** Milliseconds until a complete 200 answer to {@code request} on a new connection; -1 otherwise. */
    private double timed(String request) {
        long t0 = System.nanoTime();
        try {
            byte[] answer = fetch(request);
            String head = new String(answer, 0, Math.min(answer.length, 12), StandardCharsets.US_ASCII);
            return head.endsWith("200") ? (System.nanoTime() - t0) / 1e6 : -1;
        } catch (IOException e) {
            return -1;
        }
    }

    private byte[] fetch(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            return in.readAllBytes();
        }
    }

    private static void row(BenchResults results, String path, int opened, int failed, double[] millis,
                            String metrics) {
        double[] ok = Arrays.stream(millis).filter(v -> v >= 0).sorted().toArray();
        Map<String, Object> row = results.row();
        row.put("path", path);
        row.put("idle_connections", opened);
        row.put("idle_connect_failures", failed);
        row.put("requests", millis.length);
        row.put("errors", millis.length - ok.length);
        row.put("p50_ms", ok.length == 0 ? 0.0 : round(ok[ok.length / 2]));
        row.put("p99_ms", ok.length == 0 ? 0.0 : round(ok[Math.min(ok.length - 1, (int) Math.ceil(ok.length * 0.99) - 1)]));
        row.put("max_ms", ok.length == 0 ? 0.0 : round(ok[ok.length - 1]));
        row.put("open_connections", metric(metrics, "stitch_proxy_open_connections"));
        row.put("evicted", metric(metrics, "stitch_proxy_connections_closed_total{reason=\"evicted\"}"));
    }

    private static long metric(String metrics, String name) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + " ")) {
                return (long) Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        return 0;
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
