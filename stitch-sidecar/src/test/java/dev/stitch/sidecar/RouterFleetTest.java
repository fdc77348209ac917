package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.router.CommitLimit;
import dev.stitch.router.RollingUpdatePolicy;
import dev.stitch.router.RouterServer;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.router.RouterLink;
import dev.stitch.sync.SyncConfig;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The router in front of three real sidecars with reference engines through a rolling update
 * (docs/protocol/router.md): the sidecars ask the router before committing, one commits at a time,
 * one replica stays on the previous version while requests pinned to it are in flight, so every
 * pinned request through the router is served (no 409), and the fleet ends on the new version.
 */
class RouterFleetTest {
    private static final int REPLICAS = 3;

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

    private static int freePort() throws java.io.IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String fleetBody(int port) {
        try {
            return Http.get(port, "/fleet").body();
        } catch (Exception e) {
            return e.toString();
        }
    }

    @Test
    void pinnedRequestsThroughTheRouterAreServedDuringARollingUpdateAndThePreviousVersionIsHeld() throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        Path boardRoot = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardRoot, "run-r", BoardOptions.defaults());
        WeightPublisher publisher;
        try (Weights seed = TinyModel.weights(0)) {
            publisher = keep(WeightPublisher.builder().board(board).runId("run-r").backends(DeltaFormat.STITCH_DELTA)
                    .anchorInterval(0).threads(1).seed(seed).build());
        }
        try (Weights w = TinyModel.weights(1)) {
            publisher.publish(1, w);
        }
        // The router starts with no replicas; they join through the worker route as slime registers engines.
        RouterServer router = keep(new RouterServer(new RouterServer.Config("127.0.0.1", 0, List.of(), null,
                ProxyServer.DEFAULT_VERSIONED_ROUTES, 64 << 20, Duration.ofSeconds(60), 2_000, 200, 1_000,
                new RollingUpdatePolicy(CommitLimit.parse("1"), 1, 100, 120_000))));
        int routerPort = router.address().getPort();
        URI routerUrl = URI.create("http://127.0.0.1:" + routerPort);
        List<Sidecar> sidecars = new ArrayList<>();
        for (int i = 0; i < REPLICAS; i++) {
            ReferenceEngine engine = keep(new ReferenceEngine(ReferenceEngine.Config.local(base)
                    .withTokenLatency(Duration.ofMillis(20))).start());
            URI upstream = URI.create(engine.url());
            Path local = tmp.resolve("local-" + i);
            int port = freePort();
            String url = "http://127.0.0.1:" + port;
            SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", port),
                    SyncConfig.defaults().withPolling(0.2, 0).withBackoff(0.1, 0.3).withBoot(null, 0, local.resolve(".stitch")),
                    boardRoot, BoardLayout.STITCH, "host",
                    SglangSettings.of(upstream, boardRoot).withHostCheckpoints(local, base).withOptions(3, false, true),
                    "replica-" + i).withRouter(new RouterLink(routerUrl, null, url, RouterLink.DEFAULT_TIMEOUT));
            Sidecar s = keep(Sidecar.start(config, "test"));
            sidecars.add(s);
            assertEquals(200, Http.post(routerPort, "/add_worker?url=" + url, "").status());
        }
        assertTrue(eventually(30_000, () -> sidecars.stream().allMatch(s -> s.worker().status().currentVersion() == 1)));
        assertTrue(Http.get(routerPort, "/list_workers").body().contains("127.0.0.1:" + sidecars.get(0).port()));
        // The clients start once the router has heard from every replica: before that it rightly answers 503.
        RouterReplicas.awaitFleet(router, 30_000,
                f -> f.size() == REPLICAS && f.stream().allMatch(r -> r.routable() && r.servedVersion() == 1),
                () -> fleetBody(routerPort));

        // Steady load pinned to version 1 through the router while version 2 rolls out.
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong served = new AtomicLong();
        AtomicLong conflicts = new AtomicLong();
        List<String> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
        List<Thread> clients = new ArrayList<>();
        for (int c = 0; c < 4; c++) {
            clients.add(Thread.ofVirtual().start(() -> {
                while (running.get()) {
                    try {
                        Http.Reply r = Http.post(routerPort, "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                                + "{\"max_new_tokens\": 3}, \"weight_version\": {\"exact_version\": 1}}");
                        if (r.status() == 200) {
                            served.incrementAndGet();
                            if (!"1".equals(r.header("x-stitch-weight-version-start"))) {
                                unexpected.add("stamped " + r.header("x-stitch-weight-version-start"));
                            }
                        } else if (r.status() == 409) {
                            conflicts.incrementAndGet();
                        } else {
                            unexpected.add(r.status() + " " + r.body());
                        }
                    } catch (Exception e) {
                        unexpected.add(e.toString());
                    }
                }
            }));
        }
        assertTrue(eventually(10_000, () -> served.get() > 20));
        try (Weights w = TinyModel.weights(2)) {
            publisher.publish(2, w);
        }
        // Two replicas move on, one at a time; the third stays on version 1 while pinned work is in flight.
        assertTrue(eventually(30_000, () -> sidecars.stream().filter(s -> s.worker().status().currentVersion() == 2).count() == 2),
                () -> sidecars.stream().map(s -> s.worker().status().currentVersion() + "/" + s.worker().status().state()).toList().toString());
        long heldFrom = served.get();
        assertTrue(eventually(10_000, () -> served.get() > heldFrom + 20), () -> "requests pinned to 1 stopped being served: "
                + served.get() + " served, " + conflicts.get() + " 409s, " + unexpected + ", versions "
                + sidecars.stream().map(s -> s.worker().status().currentVersion() + "/" + s.worker().status().state()).toList()
                + ", fleet " + fleetBody(routerPort));
        assertEquals(1, sidecars.stream().filter(s -> s.worker().status().currentVersion() == 1).count());
        running.set(false);
        for (Thread t : clients) {
            t.join();
        }
        assertEquals(List.of(), unexpected);
        assertEquals(0, conflicts.get(), "a satisfiable pinned request got a 409 through the router");
        // With nothing pinned to 1 in flight, the held replica is allowed to commit.
        assertTrue(eventually(30_000, () -> sidecars.stream().allMatch(s -> s.worker().status().currentVersion() == 2)));
        String fleet = Http.get(routerPort, "/fleet").body();
        assertTrue(fleet.contains("127.0.0.1:" + sidecars.get(2).port()), fleet);
    }
}
