package dev.stitch.board.store;

import dev.stitch.testing.DirectoryHttpServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;

/** The store contract for a read-only HTTP board served from a directory (docs/protocol/board.md §7.4). */
class HttpObjectStoreTest extends ObjectStoreContract {
    private DirectoryHttpServer server;
    private Path served;

    @Override
    protected ObjectStore newStore(StoreOptions options) throws IOException {
        served = Files.createDirectories(tmp.resolve("served"));
        server = DirectoryHttpServer.serve(served);
        return ObjectStores.open(server.uri(), options);
    }

    @Override
    protected void seed(String key, byte[] bytes) throws IOException {
        Path file = served.resolve(key);
        Files.createDirectories(file.getParent());
        Files.write(file, bytes);
    }

    @AfterEach
    void stopServer() {
        if (server != null) {
            server.close();
        }
    }
}
