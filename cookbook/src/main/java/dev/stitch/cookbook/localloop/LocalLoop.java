package dev.stitch.cookbook.localloop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.engine.SglangSettings;
import dev.stitch.publish.PublishResult;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The demo loop as code to copy: a trainer publishes sparse updates of its weights, a sidecar in
 * front of an SGLang-compatible engine follows the board, and a rollout client pins each request to
 * the version it wants and checks which weights answered.
 *
 * <p>Run: {@code LocalLoop [WORK_DIR [SIZE_BYTES [VERSIONS]]]}.
 */
public final class LocalLoop {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What the loop saw for one version: the trainer's digest and the one the engine reported. */
    public record Step(long version, long changedElements, long bytesWritten, String trainerDigest, String servedDigest) {
        public boolean matches() {
            return trainerDigest.equals(servedDigest);
        }
    }

    private LocalLoop() {
    }

    public static void main(String[] args) throws Exception {
        Path work;
        long size;
        int versions;
        try {
            work = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("stitch-local-loop-");
            size = args.length > 1 ? Long.parseLong(args[1]) : 32L << 20;
            versions = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        } catch (NumberFormatException e) {
            System.err.println("usage: LocalLoop [WORK_DIR [SIZE_BYTES [VERSIONS]]] (sizes in bytes)");
            System.exit(2);
            return;
        }
        List<Step> steps = run(work, size, versions);
        for (Step s : steps) {
            System.out.printf("version %d: %d elements changed, %d bytes on the board, served by %s (%s)%n",
                    s.version(), s.changedElements(), s.bytesWritten(), s.servedDigest(), s.matches() ? "the trainer's weights" : "OTHER WEIGHTS");
        }
        System.out.println("board and checkpoints are in " + work);
        if (!steps.stream().allMatch(Step::matches)) {
            System.exit(1);
        }
    }

    /** Runs {@code versions} training steps of a {@code sizeBytes} model under {@code work}. */
    public static List<Step> run(Path work, long sizeBytes, int versions) throws IOException, InterruptedException {
        Path base = work.resolve("base");
        Path local = work.resolve("local");
        Path boardDir = work.resolve("board");
        List<Step> steps = new ArrayList<>();

        try (SyntheticModel model = SyntheticModel.generate(sizeBytes, 7)) {
            // 1. The checkpoint every engine boots from, and an empty board.
            model.writeCheckpoint(base);
            FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardDir, null, BoardOptions.defaults());

            // 2. Rollout side: the engine, and the sidecar in front of it (host mode: it applies
            //    deltas to a local copy of the checkpoint, then asks the engine for one reload).
            try (ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
                 Sidecar sidecar = Sidecar.start(new SidecarConfig(
                         ProxyServer.Config.defaults(URI.create(engine.url())).withListen("127.0.0.1", 0),
                         SyncConfig.defaults().withPolling(0.5, 0.1),
                         boardDir, BoardLayout.STITCH, "host",
                         SglangSettings.of(URI.create(engine.url()), boardDir).withHostCheckpoints(local, base),
                         null), "cookbook");
                 HttpClient http = HttpClient.newHttpClient();
                 // 3. Trainer side: the publisher's snapshot starts as the served checkpoint, byte for byte.
                 WeightPublisher publisher = WeightPublisher.builder().board(board).seedFrom(base).build()) {

                URI sidecarUrl = URI.create("http://127.0.0.1:" + sidecar.port());
                Weights.Builder tensors = Weights.builder();
                for (TensorSpec spec : model.specs()) {
                    tensors.add(spec.name(), spec.dtype(), spec.shape(), model.tensors().get(spec.name()));
                }
                try (Weights weights = tensors.build()) {
                    SplittableRandom random = new SplittableRandom(11);
                    for (long v = 1; v <= versions; v++) {
                        // 4. A training step: change ~1% of the elements a little.
                        trainStep(weights, random);
                        String trainerDigest = WeightsDigest.of(weights.segments());

                        // 5. Publish: diff against the snapshot, write the delta, move latest.json.
                        PublishResult published = publisher.publish(v, weights);

                        // 6. A rollout pinned to this version; the sidecar answers 409 until it applied it.
                        JsonNode response = generatePinned(http, sidecarUrl, v);
                        steps.add(new Step(v, published.changedElements(), published.bytesWritten(), trainerDigest,
                                response.path("meta_info").path("weights_digest").asText()));
                    }
                }
            }
        }
        return steps;
    }

    /** Nudges about 1% of each tensor's bf16 elements by one unit in the last place. */
    static void trainStep(Weights weights, SplittableRandom random) {
        for (MemorySegment t : weights.segments().values()) {
            long n = t.byteSize() / 2;
            for (long k = 0; k < n / 100; k++) {
                long i = random.nextLong(n);
                short bits = t.get(BF16, 2 * i);
                t.set(BF16, 2 * i, (short) (bits ^ 1));
            }
        }
    }

    /** POST /generate with {@code exact_version}, retrying 409 NotReady until the sidecar caught up. */
    static JsonNode generatePinned(HttpClient http, URI sidecar, long version) throws IOException, InterruptedException {
        String body = "{\"text\": \"hello\", \"sampling_params\": {\"max_new_tokens\": 4}, "
                + "\"weight_version\": {\"exact_version\": " + version + "}}";
        for (int attempt = 0; attempt < 600; attempt++) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(sidecar.resolve("/generate"))
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) {
                return JSON.readTree(r.body());
            }
            if (r.statusCode() != 409) {
                throw new IOException("generate failed: HTTP " + r.statusCode() + " " + r.body());
            }
            Thread.sleep(50);
        }
        throw new IOException("the sidecar did not reach version " + version + " within 30 s");
    }
}
