package dev.stitch.bench.fleet;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.FetchStats;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.engine.SglangSettings;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import java.net.URI;
import java.nio.file.Path;

/** One rollout host of the fleet: a reference engine and its sidecar, in this process. */
final class FleetHost implements AutoCloseable {
    private final ReferenceEngine engine;
    private final Sidecar sidecar;
    private final Path cache;

    /**
     * @param engineMode engine mode (the engine applies the delta files from the cache itself) rather than
     *                   host mode (the sidecar rewrites a local checkpoint copy and the engine reloads it)
     */
    FleetHost(String name, BoardAddress board, Path base, Path dir, double pollIntervalS, int partBytes, boolean engineMode,
              String listenHost) throws java.io.IOException {
        this.engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
        URI upstream = URI.create(engine.url());
        Path local = dir.resolve("local");
        this.cache = dir.resolve("cache");
        SidecarConfig config = new SidecarConfig(ProxyServer.Config.defaults(upstream).withListen(listenHost, 0),
                SyncConfig.defaults().withPolling(pollIntervalS, 0).withBackoff(0.2, 1).withBoot(null, 0, local.resolve(".stitch")),
                board, RemoteBoardOptions.defaults(board).withCacheDir(cache)
                        .withStore(StoreOptions.defaults().withPartBytes(partBytes)),
                BoardLayout.STITCH, engineMode ? "engine" : "host", engineMode ? SglangSettings.of(upstream, cache)
                        : SglangSettings.of(upstream, cache).withHostCheckpoints(local, base).withOptions(3, false, true), name);
        this.sidecar = Sidecar.start(config, "bench-fleet");
    }

    long servedVersion() {
        return sidecar.worker().status().currentVersion();
    }

    String lastError() {
        return sidecar.worker().status().lastSyncError();
    }

    /** The sidecar's port (it listens where datacenter A can wake it). */
    int port() {
        return sidecar.port();
    }

    String engineUrl() {
        return engine.url();
    }

    /** What this host fetched from the board (or the cache in front of it). */
    long bytesFetched() {
        return sidecar.worker().fetchStats().map(FetchStats::bytesReceived).orElse(0L);
    }

    Path cacheDir() {
        return cache;
    }

    @Override
    public void close() {
        sidecar.close();
        engine.close();
    }
}
