package dev.stitch.fanout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.VersionPublication;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.testing.DirectoryHttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fan-out endpoint (docs/protocol/board.md §7.8): token checked, the version read once through the cache, then every sidecar woken. */
class WakeFanOutTest {
    @TempDir
    Path tmp;

    @Test
    void warmsTheVersionThroughTheCacheThenWakesEverySidecar() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp.resolve("board"), "run-w", BoardOptions.defaults());
        byte[] delta = new byte[7 << 20];
        new java.util.Random(3).nextBytes(delta);
        try (VersionPublication pub = board.beginPublish("run-w", 1)) {
            pub.writeArtifact("delta-00000.bin", ArtifactKind.TRANSITION, out -> out.write(delta));
            pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[1 << 20]));
            pub.commit(ManifestFields.of("stitch_delta", "auto"));
        }
        List<String> woken = new CopyOnWriteArrayList<>();
        HttpServer sidecars = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        sidecars.createContext("/", ex -> {
            woken.add(ex.getRequestURI().getPath() + " " + new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            ex.sendResponseHeaders(200, -1);
            ex.close();
        });
        sidecars.start();
        URI sidecar = URI.create("http://127.0.0.1:" + sidecars.getAddress().getPort());
        try (DirectoryHttpServer cache = DirectoryHttpServer.serve(tmp.resolve("board"));
             WakeFanOut fanOut = new WakeFanOut(new InetSocketAddress("127.0.0.1", 0), cache.uri(), List.of(sidecar, sidecar),
                     "secret", null, StoreOptions.defaults().withPartBytes(StoreOptions.MIN_PART_BYTES))) {
            HttpClient http = HttpClient.newHttpClient();
            URI wake = URI.create("http://127.0.0.1:" + fanOut.port() + "/rpc_sync_from_bulletin_board");
            HttpRequest.Builder post = HttpRequest.newBuilder(wake).POST(HttpRequest.BodyPublishers.ofString("{\"target_version\": 1}"));
            assertEquals(401, http.send(post.build(), HttpResponse.BodyHandlers.discarding()).statusCode());
            assertEquals(0, fanOut.wakes());
            assertEquals(202, http.send(post.header("Authorization", "Bearer secret").build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode());
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (woken.size() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(List.of("/rpc_sync_from_bulletin_board {\"target_version\": 1}",
                    "/rpc_sync_from_bulletin_board {\"target_version\": 1}"), woken);
            assertEquals(delta.length, fanOut.warmedBytes(), "the delta file is read once; the anchor is left alone");
            assertTrue(cache.bodyBytes() >= delta.length && cache.bodyBytes() < delta.length + (1 << 20));
        } finally {
            sidecars.stop(0);
        }
    }
}
