package dev.stitch.sidecar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.stitch.router.RouterServer;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Closing a sidecar ends the streams it was serving: the client's connection is cut, never left open and silent.
 * Before {@code ProxyServer} closed its accepted connections itself, about one close in ten left one ESTABLISHED
 * with nothing more to come; repeated rounds make such a rate visible.
 */
class SidecarCloseCutsStreamsTest {
    private static final int ROUNDS = 10;
    private static final String LONG_STREAM = "{\"text\": \"x\", \"stream\": true, \"sampling_params\": "
            + "{\"max_new_tokens\": 5000}, \"weight_version\": {\"exact_version\": 1}}";

    @TempDir
    Path tmp;

    @Test
    void everyStreamOfAClosedSidecarIsCut() throws Exception {
        try (RouterReplicas fleet = new RouterReplicas(tmp, 1, Duration.ofMillis(20))) {
            fleet.publish(1);
            RouterReplicas.Replica r = fleet.replicas().getFirst();
            // the sidecar asks this router before commits and answers its state polls, as in a fleet
            RouterServer router = RouterReplicas.router(0, fleet.urls(), 0);
            try {
                URI routerUrl = URI.create("http://127.0.0.1:" + router.address().getPort());
                for (int i = 0; i < ROUNDS; i++) {
                    r.start(routerUrl);
                    Http.eventually(20_000, () -> r.served() == 1);
                    try (RouterReplicas.RawExchange s = new RouterReplicas.RawExchange(r.port, "POST", "/generate",
                            LONG_STREAM, Duration.ofSeconds(3))) {
                        assertEquals(200, s.status);
                        assertNotNull(s.nextEvent(), "round " + i + ": no first event");
                        r.kill();
                        assertEquals(RouterReplicas.RawExchange.End.CUT, s.finish(), "round " + i + ": " + s.endDetail());
                    }
                }
            } finally {
                router.close();
            }
        }
    }
}
