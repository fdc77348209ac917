package dev.stitch.cli;

import dev.stitch.refengine.ReferenceEngine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stitch ref-engine}: runs the SGLang-compatible reference engine until interrupted. */
@Command(name = "ref-engine",
        mixinStandardHelpOptions = true,
        description = {
            "Serve a safetensors checkpoint with the SGLang-compatible reference engine (no GPU): "
                + "/generate, /v1/completions, /v1/chat/completions (with streaming), weight loads "
                + "(/update_weights_from_disk incl. load_format=delta), pause/continue, abort and flush.",
            "Outputs are a deterministic function of the prompt and the weights digest, which every "
                + "response reports in meta_info.weights_digest. GET /debug/calls lists recorded requests."
        })
public final class RefEngineCommand implements StitchSubcommand, Runnable {

    @Option(names = "--model-path", required = true, paramLabel = "DIR",
            description = "Checkpoint directory (model.safetensors or a sharded index) served at boot.")
    Path modelPath;

    @Option(names = "--port", required = true, paramLabel = "P", description = "Listen port (0 = any free port).")
    int port;

    @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "H",
            description = "Listen address (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--token-latency-ms", defaultValue = "0", paramLabel = "X",
            description = "Time per generated token in milliseconds, fractions allowed (default: ${DEFAULT-VALUE}).")
    double tokenLatencyMs;

    @Option(names = "--io-threads", defaultValue = "1", paramLabel = "N",
            description = "Netty event-loop threads (default: ${DEFAULT-VALUE}).")
    int ioThreads;

    @Option(names = "--max-generation-tokens", paramLabel = "N",
            defaultValue = "" + ReferenceEngine.DEFAULT_MAX_GENERATION_TOKENS,
            description = "Most tokens one sequence may generate; a larger max_new_tokens or max_tokens is "
                + "clamped to it, as SGLang clamps to the context length (default: ${DEFAULT-VALUE}).")
    int maxGenerationTokens;

    public RefEngineCommand() {
    }

    @Override
    public void run() {
        if (!Files.isDirectory(modelPath)) {
            throw new CliFailure("--model-path " + modelPath + " is not a directory");
        }
        if (tokenLatencyMs < 0 || Double.isNaN(tokenLatencyMs)) {
            throw new CliFailure("--token-latency-ms must be >= 0, got " + tokenLatencyMs);
        }
        if (ioThreads < 1) {
            throw new CliFailure("--io-threads must be >= 1, got " + ioThreads);
        }
        if (maxGenerationTokens < 1) {
            throw new CliFailure("--max-generation-tokens must be >= 1, got " + maxGenerationTokens);
        }
        ReferenceEngine.Config config = new ReferenceEngine.Config(modelPath, host, port,
                Duration.ofNanos(Math.round(tokenLatencyMs * 1e6)), ioThreads, maxGenerationTokens);
        ReferenceEngine engine = new ReferenceEngine(config);
        try {
            engine.start();
        } catch (IOException | RuntimeException e) {
            throw new CliFailure("cannot start the reference engine: " + e.getMessage());
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            engine.close();
            stopped.countDown();
        }, "stitch-ref-engine-shutdown"));
        System.err.println("stitch ref-engine: serving " + modelPath + " on " + engine.url()
                + " (weights " + engine.weightsDigest() + ")");
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            engine.close();
        }
    }
}
