package dev.stitch.demo;

import dev.stitch.refengine.ReferenceEngine;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The reference engine the demo's sidecar fronts: in this JVM, or as a child JVM running
 * {@code stitch ref-engine} (closer to a real deployment, where SGLang is its own process).
 */
abstract sealed class EngineProcess implements AutoCloseable {

    /** Base URL of the engine. */
    abstract String url();

    /** Where the engine runs, for the header. */
    abstract String describe();

    @Override
    public abstract void close();

    static EngineProcess start(boolean child, Path modelPath, double tokenLatencyMs) throws IOException, InterruptedException {
        return child ? Child.start(modelPath, tokenLatencyMs) : InProcess.start(modelPath, tokenLatencyMs);
    }

    static final class InProcess extends EngineProcess {
        private final ReferenceEngine engine;

        private InProcess(ReferenceEngine engine) {
            this.engine = engine;
        }

        static InProcess start(Path modelPath, double tokenLatencyMs) throws IOException {
            Duration latency = Duration.ofNanos(Math.round(tokenLatencyMs * 1e6));
            return new InProcess(new ReferenceEngine(ReferenceEngine.Config.local(modelPath).withTokenLatency(latency)).start());
        }

        @Override
        String url() {
            return engine.url();
        }

        @Override
        String describe() {
            return "reference engine in this JVM";
        }

        @Override
        public void close() {
            engine.close();
        }
    }

    static final class Child extends EngineProcess {
        private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
        private final Process process;
        private final String url;

        private Child(Process process, String url) {
            this.process = process;
            this.url = url;
        }

        static Child start(Path modelPath, double tokenLatencyMs) throws IOException, InterruptedException {
            int port;
            try (ServerSocket probe = new ServerSocket(0)) {
                port = probe.getLocalPort();
            }
            String java = ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                    "--add-modules=jdk.incubator.vector", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    "-cp", System.getProperty("java.class.path"), "dev.stitch.cli.StitchCli", "ref-engine",
                    "--model-path", modelPath.toString(), "--host", "127.0.0.1", "--port", Integer.toString(port),
                    "--token-latency-ms", String.format(Locale.ROOT, "%s", tokenLatencyMs)));
            Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            Child child = new Child(p, "http://127.0.0.1:" + port);
            try {
                child.awaitHealthy();
            } catch (IOException | InterruptedException | RuntimeException e) {
                child.close();
                throw e;
            }
            return child;
        }

        private void awaitHealthy() throws IOException, InterruptedException {
            long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
            try (HttpClient http = HttpClient.newHttpClient()) {
                while (true) {
                    if (!process.isAlive()) {
                        throw new IOException("the reference engine process exited with status " + process.exitValue());
                    }
                    try {
                        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create(url + "/health"))
                                .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.discarding());
                        if (r.statusCode() == 200) {
                            return;
                        }
                    } catch (IOException e) {
                        if (System.nanoTime() > deadline) {
                            throw new IOException("the reference engine process did not answer on " + url + " within "
                                    + START_TIMEOUT.toSeconds() + " s", e);
                        }
                    }
                    Thread.sleep(50);
                }
            }
        }

        @Override
        String url() {
            return url;
        }

        @Override
        String describe() {
            return "reference engine in child process " + process.pid();
        }

        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
