package dev.stitch.sidecar.router;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import dev.stitch.sync.CommitPermission;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** How router answers turn into decisions (docs/protocol/sidecar-http.md §5.2). */
class RouterCommitPermissionTest {

    private HttpServer router;
    private final AtomicReference<String> answer = new AtomicReference<>();
    private final AtomicReference<Integer> status = new AtomicReference<>(200);
    private final AtomicReference<String> authorization = new AtomicReference<>();
    private RouterCommitPermission permission;

    @BeforeEach
    void setUp() throws Exception {
        router = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        router.createContext("/stitch/commit_permission", ex -> {
            ex.getRequestBody().readAllBytes();
            authorization.set(ex.getRequestHeaders().getFirst("Authorization"));
            byte[] body = answer.get().getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(status.get(), body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        router.start();
        permission = new RouterCommitPermission(URI.create("http://127.0.0.1:" + router.getAddress().getPort() + "/"),
                "secret", "r1", Duration.ofSeconds(2));
    }

    @AfterEach
    void tearDown() {
        permission.close();
        router.stop(0);
    }

    @Test
    void grantsDenialsAndUnusableAnswers() {
        answer.set("{\"granted\": true}");
        assertEquals(CommitPermission.GRANTED, permission.ask(1, 2));
        assertEquals("Bearer secret", authorization.get());

        answer.set("{\"granted\": false, \"retry_after_ms\": 250}");
        assertEquals(new CommitPermission.Decision.Deferred(250), permission.ask(1, 2));
        answer.set("{\"granted\": false}");
        assertEquals(new CommitPermission.Decision.Deferred(RouterCommitPermission.DEFAULT_RETRY_MS),
                permission.ask(1, 2));
        answer.set("{\"granted\": false, \"retry_after_ms\": 0}");
        assertEquals(new CommitPermission.Decision.Deferred(RouterCommitPermission.MIN_RETRY_MS),
                permission.ask(1, 2));

        answer.set("{\"granted\": \"no\"}");
        assertEquals(CommitPermission.GRANTED, permission.ask(1, 2));
        status.set(503);
        answer.set("{\"granted\": false}");
        assertEquals(CommitPermission.GRANTED, permission.ask(1, 2));

        StringBuilder metrics = new StringBuilder();
        permission.appendPrometheus(metrics);
        assertEquals(true, metrics.toString().contains("stitch_router_denials_total 3\n"), metrics.toString());
        assertEquals(true, metrics.toString().contains("stitch_router_unreachable_total 2\n"), metrics.toString());
    }
}
