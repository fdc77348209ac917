package dev.stitch.cookbook.slimecompat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sync.SyncConfig;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Engine mode for a patched SGLang (slime's v1 delta receiver): the trainer publishes slime v1
 * {@code sparse_delta} files, and the sidecar hands each version's files to the engine with
 * {@code POST /update_weights_from_disk {"load_format": "delta", "files": [...]}} instead of applying
 * them itself. The reference engine's delta loader stands in for the patched SGLang and records
 * every call, so this example prints the exact HTTP traffic a real engine would receive.
 *
 * <p>Run: {@code SlimeCompat [WORK_DIR [SIZE_BYTES [VERSIONS]]]}.
 */
public final class SlimeCompat {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * What happened.
     *
     * @param engineCalls    the weight-update calls the engine received, as {@code METHOD /path body}
     * @param manifests      each published version's manifest
     * @param trainerDigest  digest of the trainer's final weights
     * @param engineDigest   digest of the weights the engine serves at the end
     */
    public record Outcome(List<String> engineCalls, List<Manifest> manifests, String trainerDigest, String engineDigest) {
        public boolean digestsMatch() {
            return trainerDigest.equals(engineDigest);
        }
    }

    private SlimeCompat() {
    }

    public static void main(String[] args) throws Exception {
        Path work;
        long size;
        int versions;
        try {
            work = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("stitch-slime-compat-");
            size = args.length > 1 ? Long.parseLong(args[1]) : 16L << 20;
            versions = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        } catch (NumberFormatException e) {
            System.err.println("usage: SlimeCompat [WORK_DIR [SIZE_BYTES [VERSIONS]]] (sizes in bytes)");
            System.exit(2);
            return;
        }
        Outcome o = run(work, size, versions);
        System.out.println("HTTP calls the engine received from the sidecar:");
        for (String call : o.engineCalls()) {
            // The sidecar first checks that the engine has slime's delta receiver: a receiver refuses empty files with 400.
            boolean probe = call.contains("\"files\":[]") && !call.contains("\"weight_version\"");
            System.out.println("  " + call + (probe ? "   <- receiver probe" : ""));
        }
        System.out.println("trainer weights " + o.trainerDigest());
        System.out.println("engine weights  " + o.engineDigest() + (o.digestsMatch() ? "  (equal)" : "  (DIFFERENT)"));
        System.out.println("board and checkpoints are in " + work);
        if (!o.digestsMatch()) {
            System.exit(1);
        }
    }

    public static Outcome run(Path work, long sizeBytes, int versions) throws IOException, InterruptedException {
        Path base = work.resolve("base");
        Path boardDir = work.resolve("board");
        List<Manifest> manifests = new ArrayList<>();
        try (SyntheticModel model = SyntheticModel.generate(sizeBytes, 5)) {
            model.writeCheckpoint(base);
            FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardDir, null, BoardOptions.defaults());
            URI engineUrl;
            String trainerDigest;
            try (ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start()) {
                engineUrl = URI.create(engine.url());
                // Engine mode: no local checkpoint; the engine reads the version directories itself
                // (with a shared volume mounted elsewhere, SglangSettings.withEnginePaths maps the paths).
                SidecarConfig config = new SidecarConfig(
                        ProxyServer.Config.defaults(engineUrl).withListen("127.0.0.1", 0),
                        SyncConfig.defaults().withPolling(0.5, 0.1),
                        boardDir, BoardLayout.STITCH, "engine", SglangSettings.of(engineUrl, boardDir), null);
                Weights.Builder tensors = Weights.builder();
                for (TensorSpec spec : model.specs()) {
                    tensors.add(spec.name(), spec.dtype(), spec.shape(), model.tensors().get(spec.name()));
                }
                try (Sidecar sidecar = Sidecar.start(config, "cookbook");
                     HttpClient http = HttpClient.newHttpClient();
                     WeightPublisher publisher = WeightPublisher.builder().board(board)
                             .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL)   // slime v1 files; full-only if a version cannot be expressed
                             .allowFullFallback(true)   // this sidecar loads full versions; upstream v1 consumers could not
                             .seedFrom(base).build();
                     Weights weights = tensors.build()) {
                    URI sidecarUrl = URI.create("http://127.0.0.1:" + sidecar.port());
                    TrainerStep optimizer = new TrainerStep(0.03, TrainerStep.Pattern.UNIFORM, 5);
                    for (long v = 1; v <= versions; v++) {
                        optimizer.apply(model.tensors(), v);
                        publisher.publish(v, weights);
                        manifests.add(board.readManifest(v));
                        awaitVersion(http, sidecarUrl, v);
                    }
                    trainerDigest = WeightsDigest.of(weights.segments());
                }
                List<String> calls = new ArrayList<>();
                for (ReferenceEngine.Call c : engine.calls()) {
                    String route = c.route();
                    if (route.equals("update_weights_from_disk") || route.equals("update_weight_version")) {
                        calls.add(c.method() + " " + c.path() + " " + c.body());
                    }
                }
                return new Outcome(calls, manifests, trainerDigest, engine.weightsDigest());
            }
        }
    }

    /** Sends a pinned rollout until the sidecar serves {@code version} (409 NotReady until then). */
    private static void awaitVersion(HttpClient http, URI sidecar, long version) throws IOException, InterruptedException {
        String body = "{\"text\": \"ping\", \"sampling_params\": {\"max_new_tokens\": 1}, "
                + "\"weight_version\": {\"exact_version\": " + version + "}}";
        for (int attempt = 0; attempt < 600; attempt++) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(sidecar.resolve("/generate"))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) {
                JsonNode meta = JSON.readTree(r.body()).path("meta_info");
                if (!meta.path("weight_version").asText().equals(Long.toString(version))) {
                    throw new IOException("pinned to " + version + " but stamped " + meta.path("weight_version"));
                }
                return;
            }
            if (r.statusCode() != 409) {
                throw new IOException("generate failed: HTTP " + r.statusCode() + " " + r.body());
            }
            Thread.sleep(50);
        }
        throw new IOException("the sidecar did not reach version " + version + " within 30 s");
    }
}
