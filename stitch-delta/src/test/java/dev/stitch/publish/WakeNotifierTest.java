package dev.stitch.publish;

import static dev.stitch.publish.PublisherFixtures.model;
import static dev.stitch.publish.PublisherFixtures.step;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.encode.TensorData;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The publisher's wake notification (docs/protocol/board.md §7.7): one POST per URL after the pointer moved,
 * sent in parallel with a bearer token, a bare sidecar URL sent to its sync route and any other URL as given;
 * failures (a wrong token, nobody listening, no answer in time) are counted and never fail the publish.
 */
class WakeNotifierTest {
    private static final String TOKEN = "s3cret";

    @TempDir
    Path tmp;
    private HttpServer server;
    /** What each path received: {@code <authorization header> <body>}. */
    private final Map<String, String> received = new ConcurrentHashMap<>();
    private final CountDownLatch hold = new CountDownLatch(1);

    @BeforeEach
    void startHosts() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        server.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", ex -> {
            try (ex) {
                String auth = ex.getRequestHeaders().getFirst("Authorization");
                String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
                received.put(ex.getRequestURI().getPath(), ex.getRequestMethod() + " " + auth + " " + body);
                if (ex.getRequestURI().getPath().startsWith("/slow")) {
                    hold.await(30, TimeUnit.SECONDS);
                }
                boolean authorized = ("Bearer " + TOKEN).equals(auth);
                ex.sendResponseHeaders(authorized ? 200 : 401, -1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        hold.countDown();
        server.stop(0);
    }

    private URI url(String path) {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
    }

    @Test
    void aBareSidecarUrlGetsItsSyncRouteAndAnyOtherUrlIsPostedAsGiven() throws Exception {
        try (WakeNotifier n = new WakeNotifier(List.of(url(""), url("/"), url("/fleet/wake")), TOKEN, Duration.ofSeconds(5))) {
            assertEquals(List.of(url(WakeNotifier.SYNC_ROUTE), url(WakeNotifier.SYNC_ROUTE), url("/fleet/wake")),
                    n.targets());
            PublishResult.Notifications r = n.published(7).get(30, TimeUnit.SECONDS);
            assertEquals(new PublishResult.Notifications(3, 0, List.of()), r);
        }
        String expected = "POST Bearer " + TOKEN + " {\"target_version\": 7}";
        assertEquals(expected, received.get(WakeNotifier.SYNC_ROUTE));
        assertEquals(expected, received.get("/fleet/wake"));
    }

    @Test
    void failuresAreCountedAndNamedNeverThrown() throws Exception {
        URI nobody;
        try (ServerSocket s = new ServerSocket(0)) {
            nobody = URI.create("http://127.0.0.1:" + s.getLocalPort());
        }
        try (WakeNotifier n = new WakeNotifier(List.of(url("/a"), nobody, url("/slow")), "wrong",
                Duration.ofMillis(500))) {
            PublishResult.Notifications r = n.published(3).get(30, TimeUnit.SECONDS);
            assertEquals(0, r.delivered());
            assertEquals(3, r.failed());
            assertTrue(r.failures().get(0).endsWith("/a: HTTP 401 (wrong or missing token)"), r.failures().get(0));
            assertTrue(r.failures().get(1).startsWith(nobody.resolve(WakeNotifier.SYNC_ROUTE) + ": "), r.failures().get(1));
            assertTrue(r.failures().get(2).endsWith("/slow: no answer in time"), r.failures().get(2));
        }
    }

    @Test
    void aPublishNotifiesAfterThePointerMovedAndSucceedsWhateverTheAnswers() throws Exception {
        List<TensorData> v0 = model(31);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        try (WeightPublisher p = WeightPublisher.builder().board(board).threads(1).seed(Weights.of(v0))
                .notify(List.of(url("/host-1"), url("/host-2")), TOKEN).build()) {
            PublishResult r = p.publish(1, Weights.of(step(v0, 0.02, 1)));
            assertEquals(new PublishResult.Notifications(2, 0, List.of()), r.notifications());
            assertEquals("POST Bearer " + TOKEN + " {\"target_version\": 1}", received.get("/host-2"));
            assertEquals(1, board.readLatest().version());
        }
        try (WeightPublisher p = WeightPublisher.builder().board(board).threads(1).seed(Weights.of(step(v0, 0.02, 1)))
                .notify(List.of(url("/host-1")), "stale-token").build()) {
            PublishResult r = p.publish(2, Weights.of(step(v0, 0.02, 2)));
            assertEquals(1, r.notifications().failed(), "a refused notification is counted");
            assertEquals(2, board.readLatest().version(), "and the version is published all the same");
        }
        try (WeightPublisher p = WeightPublisher.builder().board(tmp.resolve("quiet")).threads(1).seed(Weights.of(v0))
                .build()) {
            assertEquals(PublishResult.Notifications.NONE, p.publish(1, Weights.of(step(v0, 0.02, 1))).notifications());
        }
    }

    @Test
    void urlsThatCannotBeNotifiedAreRefusedWhenConfigured() {
        assertThrows(IllegalArgumentException.class,
                () -> WeightPublisher.builder().notify(List.of(URI.create("ftp://host/x")), TOKEN));
        assertThrows(IllegalArgumentException.class,
                () -> WeightPublisher.builder().notify(List.of(URI.create("file:///tmp/x")), TOKEN));
        assertThrows(IllegalArgumentException.class,
                () -> new WakeNotifier(List.of(url("")), TOKEN, Duration.ZERO));
    }
}
