package dev.stitch.bench.router;

import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.router.RouterLink;
import dev.stitch.sync.SyncConfig;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The fleet of {@code stitch bench router}: a trainer publishing to a board directory, and replicas (reference
 * engine + sidecar in host mode, in this process) that ask the router before committing.
 */
final class RouterFleet implements AutoCloseable {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final SyntheticModel model;
    private final WeightPublisher publisher;
    private final FilesystemBulletinBoard board;
    private final TrainerStep step = new TrainerStep(0.03, TrainerStep.Pattern.parse("uniform"), 29);
    private final List<Sidecar> sidecars = new ArrayList<>();
    private final List<String> urls = new ArrayList<>();
    private final Map<Long, String> digests = new ConcurrentHashMap<>();
    private final Path base;
    private long published;

    RouterFleet(Path work, long modelBytes, int replicas) throws IOException {
        model = keep(SyntheticModel.generate(modelBytes, 31));
        base = work.resolve("base");
        model.writeCheckpoint(base);
        board = FilesystemBulletinBoard.create(work.resolve("board"), "bench", BoardOptions.defaults());
        publisher = keep(WeightPublisher.builder().board(board).runId("bench").backends(DeltaFormat.STITCH_DELTA)
                .anchorInterval(0).threads(1).recordWeightsDigest(true).seedFrom(base).build());
        for (int i = 0; i < replicas; i++) {
            urls.add("http://127.0.0.1:" + freePort());
        }
    }

    /** The replicas' sidecar URLs (fixed before they start, so the router can be told first). */
    List<String> urls() {
        return urls;
    }

    /** Starts the replicas, each asking {@code router} before it commits. */
    void start(URI router, Path work) throws IOException {
        for (int i = 0; i < urls.size(); i++) {
            ReferenceEngine engine = keep(new ReferenceEngine(ReferenceEngine.Config.local(base)).start());
            URI upstream = URI.create(engine.url());
            Path local = work.resolve("local-" + i);
            int port = URI.create(urls.get(i)).getPort();
            SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", port),
                    SyncConfig.defaults().withPolling(0.5, 0).withBackoff(0.1, 0.5).withBoot(null, 0, local.resolve(".stitch")),
                    board.root(), BoardLayout.STITCH, "host",
                    SglangSettings.of(upstream, board.root()).withHostCheckpoints(local, base).withOptions(3, false, true),
                    "replica-" + i).withRouter(new RouterLink(router, null, urls.get(i), RouterLink.DEFAULT_TIMEOUT));
            sidecars.add(keep(Sidecar.start(config, "bench-router")));
        }
    }

    /** Publishes the next version and remembers its weights digest. */
    long publish() throws IOException {
        long v = ++published;
        step.apply(model.tensors(), v);
        publisher.publish(v, model.weights());
        Manifest m = board.readManifest(v);
        digests.put(v, m.metadata().path("weights_digest").asText());
        return v;
    }

    /** The weights digest of each published version. */
    Map<Long, String> digests() {
        return digests;
    }

    /** The versions some replica serves now, ascending. */
    TreeSet<Long> served() {
        TreeSet<Long> s = new TreeSet<>();
        for (Sidecar c : sidecars) {
            s.add(c.worker().status().currentVersion());
        }
        return s;
    }

    /** Waits until every replica serves {@code v}. */
    void awaitAll(long v, Duration limit) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < deadline) {
            if (sidecars.stream().allMatch(s -> s.worker().status().currentVersion() >= v)) {
                return;
            }
            TimeUnit.MILLISECONDS.sleep(20);
        }
        throw new IOException("the fleet did not reach version " + v + " within " + limit.toSeconds() + " s: " + served());
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                System.err.println("closing: " + e.getMessage());
            }
        }
    }
}
