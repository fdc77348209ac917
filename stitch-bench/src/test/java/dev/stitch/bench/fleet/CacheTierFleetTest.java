package dev.stitch.bench.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.bench.remote.S3ProxyServer;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import dev.stitch.testing.FaultInjectingProxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small fleet behind the cache tier (docs/protocol/board.md §7.8): a trainer publishes to S3
 * (s3proxy), the repository's nginx configuration caches the board in "datacenter B", and three
 * sidecars with reference engines follow it through the cache. Every sidecar serves the trainer's
 * weights, each fetched the whole version, and the origin sent about one copy of each version.
 */
class CacheTierFleetTest {
    private static final int HOSTS = 3;
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    @Test
    void threeSidecarsFollowAnS3BoardThroughTheCacheAndTheOriginSendsEachVersionOnce() throws Exception {
        String why = NginxCache.unavailableReason();
        assumeTrue(why == null, () -> "skipped: " + why + "; .ci/run installs nginx-light where apt is available");
        S3ProxyServer s3 = keep(S3ProxyServer.start(S3ProxyServer.locateJar(null), java.nio.file.Files.createDirectories(
                tmp.resolve("s3")), "127.0.0.1", List.of(), tmp.resolve("s3proxy.log"), true));
        S3ProxyServer.createBucket(s3.endpoint(), "fleet");
        System.setProperty("aws.accessKeyId", S3ProxyServer.IDENTITY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.CREDENTIAL);
        System.setProperty("aws.region", "us-east-1");

        // the trainer in datacenter A
        BoardAddress s3Board = BoardAddress.parse("s3://fleet/board");
        StoreOptions store = StoreOptions.defaults().withPartBytes(StoreOptions.MIN_PART_BYTES).withS3Endpoint(s3.endpoint(), true);
        RemoteBulletinBoard board = keep(RemoteBulletinBoard.create(s3Board, "run-f", BoardOptions.defaults(),
                RemoteBoardOptions.defaults(s3Board).withCacheDir(tmp.resolve("trainer-cache")).withStore(store)));
        SyntheticModel model = keep(SyntheticModel.generate(12L << 20, 3));
        Path base = tmp.resolve("base");
        model.writeCheckpoint(base);
        WeightPublisher publisher = keep(WeightPublisher.builder().board(board).runId("run-f")
                .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(0).threads(1)
                .recordWeightsDigest(true).seedFrom(base).build());
        TrainerStep step = new TrainerStep(0.03, TrainerStep.Pattern.parse("uniform"), 5);

        // the link between the datacenters counts what crosses it; the cache sits in datacenter B
        FaultInjectingProxy link = keep(FaultInjectingProxy.start(s3.endpoint()));
        NginxCache cache = keep(NginxCache.start(link.endpoint(), "/fleet/board", "127.0.0.1", freePort(), tmp.resolve("nginx"),
                "4m", List.of()));
        BoardAddress cached = BoardAddress.parse(cache.boardUri("/fleet/board").toString());

        List<Sidecar> sidecars = new ArrayList<>();
        for (int h = 0; h < HOSTS; h++) {
            ReferenceEngine engine = keep(new ReferenceEngine(ReferenceEngine.Config.local(base)).start());
            URI upstream = URI.create(engine.url());
            Path local = tmp.resolve("local-" + h);
            SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                    SyncConfig.defaults().withPolling(0.5, 0).withBackoff(0.1, 0.5).withBoot(null, 0, local.resolve(".stitch")),
                    cached, RemoteBoardOptions.defaults(cached).withCacheDir(tmp.resolve("cache-" + h))
                            .withStore(StoreOptions.defaults().withPartBytes(StoreOptions.MIN_PART_BYTES)),
                    BoardLayout.STITCH, "host", SglangSettings.of(upstream, tmp.resolve("cache-" + h))
                            .withHostCheckpoints(local, base).withOptions(3, false, true), "host-" + h);
            sidecars.add(keep(Sidecar.start(config, "test")));
        }

        long versionBytes = 0;
        for (int v = 1; v <= 3; v++) {
            step.apply(model.tensors(), v);
            publisher.publish(v, model.weights());
            Manifest m = board.readManifest(v);
            for (Artifact a : m.artifacts()) {
                versionBytes += a.sizeBytes();
            }
            long version = v;
            assertTrue(eventually(() -> sidecars.stream().allMatch(s -> s.worker().status().currentVersion() == version)),
                    () -> "not every host reached version " + version + ": " + sidecars.stream()
                            .map(s -> s.worker().status().currentVersion() + "/" + s.worker().status().lastSyncError()).toList()
                            + "; nginx: " + cache.errors());
        }
        String digest = board.readManifest(3).metadata().path("weights_digest").asText();
        HttpClient http = HttpClient.newHttpClient();
        for (Sidecar s : sidecars) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + "/generate"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": 1},"
                            + " \"weight_version\": {\"exact_version\": 3}}")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            JsonNode meta = JSON.readTree(r.body()).path("meta_info");
            assertEquals(digest, meta.path("weights_digest").asText(), "every host serves the trainer's weights");
        }
        // Each host fetched every version; the origin sent about one copy (plus pointer polls and headers).
        double originRatio = (double) link.bytesToClient() / versionBytes;
        System.out.printf("origin bytes %d for %d bytes of versions across %d hosts: %.3fx%n", link.bytesToClient(),
                versionBytes, HOSTS, originRatio);
        assertTrue(originRatio < 1.5, "the origin sent " + link.bytesToClient() + " bytes for " + versionBytes
                + " bytes of versions (" + originRatio + "x); without the cache it would be about " + HOSTS + "x");
    }

    private static boolean eventually(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    private static int freePort() throws java.io.IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
