package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.engine.SglangSettings;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import java.net.URI;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A flood of {@code /wake} calls refreshes the board a bounded number of times (security.md). */
class ControlRouteFloodTest {
    private static final Pattern REFRESHES = Pattern.compile("(?m)^stitch_board_refresh_seconds_count (\\d+)$");

    @TempDir
    Path tmp;
    private Sidecar sidecar;

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
    }

    private static long refreshes(int port) throws Exception {
        Matcher m = REFRESHES.matcher(Http.get(port, "/metrics").body());
        assertTrue(m.find(), "no refresh count in /metrics");
        return Long.parseLong(m.group(1));
    }

    @Test
    void aThousandWakesRefreshTheBoardAtMostAtTheConfiguredRate() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp.resolve("board"), null,
                BoardOptions.defaults());
        ControlEndpointsTest.ScriptedEngine engine = new ControlEndpointsTest.ScriptedEngine();
        engine.healthy = true;
        URI upstream = URI.create("http://127.0.0.1:9");
        SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen("127.0.0.1", 0),
                SyncConfig.defaults().withPolling(0, 0).withBackoff(0.2, 0.4).withLimits(0, 8, false, 60),
                board.root(), BoardLayout.STITCH, "engine", SglangSettings.of(upstream, board.root()), null);
        sidecar = Sidecar.start(config, engine, "stitch-test");
        int port = sidecar.port();
        assertTrue(eventually(10_000, () -> sidecar.worker().status().ready()));
        Thread.sleep(300);
        long before = refreshes(port);

        long t0 = System.nanoTime();
        int accepted = 0;
        int limited = 0;
        for (int i = 0; i < 1_000; i++) {
            Http.Reply r = Http.post(port, "/wake", "");
            if (r.status() == 200) {
                accepted++;
            } else {
                assertEquals(429, r.status(), r.body());
                assertTrue(r.body().contains("RateLimited"), r.body());
                limited++;
            }
        }
        double elapsedS = (System.nanoTime() - t0) / 1e9;
        Thread.sleep(500); // let the last accepted wake's pass finish
        long refreshed = refreshes(port) - before;

        // Defaults: 5 calls per second, burst 10.
        double allowed = 10 + 5 * elapsedS + 1;
        assertTrue(accepted <= allowed, accepted + " wakes accepted in " + elapsedS + " s");
        assertEquals(1_000, accepted + limited);
        assertTrue(refreshed <= accepted, refreshed + " refreshes for " + accepted + " accepted wakes");
        assertTrue(refreshed >= 1, "an accepted wake still refreshes the board");
        assertEquals(limited, sidecar.proxy().stats().rejections("RateLimited"));
    }
}
