package dev.stitch.bench.proxy;

import dev.stitch.bench.ProcessCpu;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The sidecar as a child JVM running {@code stitch sidecar} from this process's class path. */
public final class SidecarProcess implements AutoCloseable {
    private final Process process;
    private final int port;
    private final ProcessCpu cpu;
    private final Path log;

    private SidecarProcess(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
        this.cpu = ProcessCpu.of(process);
    }

    public static SidecarProcess start(Path work, String engineUrl, String heap) throws IOException {
        Path board = Files.createDirectories(work.resolve("board").resolve("versions")).getParent();
        int port = freePort();
        String java = ProcessHandle.current().info().command().orElse(
                Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx" + heap, "-XX:+UseSerialGC",
                "--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", System.getProperty("java.class.path"), "dev.stitch.cli.StitchCli", "sidecar",
                "--board", board.toString(), "--upstream", engineUrl, "--mode", "engine",
                "--commit-mode", "quiesce", "--host", "127.0.0.1", "--port", Integer.toString(port),
                "--probe-delta-receiver=false", "--poll-interval-s", "5",
                // Long enough that the idle-connection check measures the connection cap, not the header timeout.
                "--header-timeout-s", "300"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(work.resolve("sidecar.log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("STITCH_"));
        return new SidecarProcess(pb.start(), port, work.resolve("sidecar.log"));
    }

    public long pid() {
        return process.pid();
    }

    public int port() {
        return port;
    }

    /** Waits for {@code GET /health} to answer 200 (first catch-up done). */
    public void awaitReady(Duration timeout) throws IOException, InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer";
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("the sidecar exited with status " + process.exitValue() + ": " + lastLog());
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health"))
                        .timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
                last = r.statusCode() + " " + r.body();
            } catch (IOException e) {
                last = e.toString();
            }
            Thread.sleep(100);
        }
        throw new IOException("the sidecar did not become ready within " + timeout.toSeconds() + " s: " + last);
    }

    private String lastLog() {
        try {
            List<String> lines = Files.readAllLines(log);
            return lines.isEmpty() ? "(no output)" : lines.getLast();
        } catch (IOException e) {
            return "(no log)";
        }
    }


    /** CPU time of the child, whole and without the JIT compiler threads ({@link ProcessCpu}). */
    public long[] cpuNanos() throws IOException {
        return cpu.nanos();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
