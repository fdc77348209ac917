package dev.stitch.bench.router;

import dev.stitch.bench.ProcessCpu;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@code stitch router} as a child process, so that the bench can read its CPU time apart from everything else. */
final class RouterProcess implements AutoCloseable {
    private final Process process;
    private final URI url;
    private final Path log;
    private final ProcessCpu cpu;

    private RouterProcess(Process process, URI url, Path log) {
        this.process = process;
        this.cpu = ProcessCpu.of(process);
        this.url = url;
        this.log = log;
    }

    static RouterProcess start(List<String> replicas, Path log) throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"), "dev.stitch.cli.StitchCli", "router",
                "--listen", "127.0.0.1:" + port, "--replicas", String.join(",", replicas),
                "--max-committing", "1", "--hold-previous", "1"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        return new RouterProcess(p, URI.create("http://127.0.0.1:" + port), log);
    }

    URI url() {
        return url;
    }

    /** Waits until the router lists {@code n} replicas, all serving. */
    void awaitReplicas(int n, HttpClient http) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        String last = "";
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("the router exited: " + Files.readString(log));
            }
            try {
                last = http.send(HttpRequest.newBuilder(url.resolve("/fleet")).build(), HttpResponse.BodyHandlers.ofString()).body();
                if (last.split("\"state\":\"serving\"", -1).length - 1 >= n) {
                    return;
                }
            } catch (IOException notYet) {
                // still starting
            }
            TimeUnit.MILLISECONDS.sleep(100);
        }
        throw new IOException("the router did not see " + n + " serving replicas: " + last);
    }

    /** The router process's CPU time so far: whole, and without the JIT compiler threads ({@link ProcessCpu}). */
    long[] cpu() throws IOException {
        return cpu.nanos();
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
