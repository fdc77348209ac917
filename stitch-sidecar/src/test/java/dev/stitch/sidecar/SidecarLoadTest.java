package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.format.DeltaFormat;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bounded load test: 64 clients send 5 000 versioned requests through a host-mode sidecar while
 * the trainer publishes a version every 200 ms. Every response's {@code weights_digest} must be the
 * trainer's digest of the version stamped on it, and every request must be answered.
 */
class SidecarLoadTest {

    private static final int CLIENTS = 64;
    private static final int REQUESTS = 5_000;

    @TempDir
    Path tmp;

    private static String metricValue(String text, String series) {
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) {
                return line.substring(series.length() + 1).strip();
            }
        }
        throw new AssertionError(series + " not in\n" + text);
    }

    @Test
    void noMislabeledAndNoLostResponsesUnderPublishing() throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        Path boardRoot = tmp.resolve("board");
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(boardRoot, "run-a", BoardOptions.defaults());
        Map<Long, String> digests = new ConcurrentHashMap<>();
        digests.put(0L, TinyModel.digest(0));
        WeightPublisher publisher;
        try (Weights seed = TinyModel.weights(0)) {
            publisher = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(0).threads(1).seed(seed).build();
        }
        ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(base)
                .withTokenLatency(Duration.ofMillis(1))).start();
        URI upstream = URI.create(engine.url());
        SidecarConfig config = new SidecarConfig(
                ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withPolling(0.1, 0.05).withDrain(5, 5),
                boardRoot, BoardLayout.STITCH, "host",
                SglangSettings.of(upstream, boardRoot).withHostCheckpoints(tmp.resolve("local"), base),
                null);
        AtomicBoolean publishing = new AtomicBoolean(true);
        AtomicInteger published = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS + 1);
        try (Sidecar sidecar = Sidecar.start(config, "test")) {
            int port = sidecar.port();
            assertTrue(eventually(20_000, () -> sidecar.worker().status().ready()));
            Future<?> trainer = pool.submit(() -> {
                int step = 0;
                while (publishing.get()) {
                    step++;
                    String digest = TinyModel.digest(step);
                    digests.put((long) step, digest);
                    try (Weights w = TinyModel.weights(step)) {
                        publisher.publish(step, w);
                    }
                    published.set(step);
                    Thread.sleep(200);
                }
                return null;
            });
            AtomicInteger next = new AtomicInteger();
            AtomicInteger ok = new AtomicInteger();
            AtomicInteger tooOld = new AtomicInteger();
            List<String> mislabeled = java.util.Collections.synchronizedList(new ArrayList<>());
            List<String> lost = java.util.Collections.synchronizedList(new ArrayList<>());
            List<Future<?>> clients = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                clients.add(pool.submit(() -> {
                    long seen = 0;
                    while (next.getAndIncrement() < REQUESTS) {
                        String constraint = switch (ThreadLocalRandom.current().nextInt(3)) {
                            case 0 -> "";
                            case 1 -> ", \"weight_version\": {\"min_version\": " + seen + "}";
                            default -> ", \"weight_version\": {\"exact_version\": " + seen + "}";
                        };
                        try {
                            Http.Reply r = Http.post(port, "/generate", "{\"text\": \"load test\", "
                                    + "\"sampling_params\": {\"max_new_tokens\": 2}" + constraint + "}");
                            if (r.status() == 409) {
                                tooOld.incrementAndGet();
                                seen = Math.max(seen, r.json().path("error").path("current_version").asLong());
                                continue;
                            }
                            if (r.status() != 200) {
                                lost.add(r.status() + " " + r.body());
                                continue;
                            }
                            long start = Long.parseLong(r.header("x-stitch-weight-version-start"));
                            long end = Long.parseLong(r.header("x-stitch-weight-version-end"));
                            JsonNode meta = r.json().path("meta_info");
                            String digest = meta.path("weights_digest").asText();
                            if (start != end || !digest.equals(digests.get(start))
                                    || !meta.path("weight_version").asText().equals(Long.toString(start))) {
                                mislabeled.add("start " + start + " end " + end + " digest " + digest);
                            }
                            seen = Math.max(seen, start);
                            ok.incrementAndGet();
                        } catch (Exception e) {
                            lost.add(e.toString());
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : clients) {
                f.get(120, TimeUnit.SECONDS);
            }
            publishing.set(false);
            trainer.get(30, TimeUnit.SECONDS);
            assertEquals(List.of(), lost, "lost requests");
            assertEquals(List.of(), mislabeled, "mislabeled responses");
            assertEquals(REQUESTS, ok.get() + tooOld.get());
            assertTrue(published.get() >= 3, "versions published: " + published.get());
            long last = published.get();
            assertTrue(eventually(20_000, () -> sidecar.worker().status().currentVersion() == last));
            assertEquals(digests.get(last), engine.weightsDigest());
            assertEquals(0, sidecar.worker().status().activeRequests());
            // no starvation: every commit under load closed and reopened the gate within the 5 s drain bound
            String metrics = Http.get(port, "/metrics").body();
            String count = metricValue(metrics, "stitch_commit_duration_seconds_count");
            assertTrue(Long.parseLong(count) >= 3, metrics);
            assertEquals(count, metricValue(metrics, "stitch_commit_duration_seconds_bucket{le=\"5.0\"}"));
            assertEquals("0", metricValue(metrics, "stitch_drain_preempted_requests_total"));
        } finally {
            publishing.set(false);
            pool.shutdownNow();
            engine.close();
            publisher.close();
        }
    }
}
