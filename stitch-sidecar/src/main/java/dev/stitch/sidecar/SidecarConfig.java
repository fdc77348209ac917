package dev.stitch.sidecar;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.engine.SglangSettings;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.SyncConfig;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Everything {@code stitch sidecar} is configured with (docs/protocol/cli-and-config.md §8), grouped by the part
 * that uses it.
 *
 * @param proxy        the data plane: listen address, engine URL, routes, limits, timeouts
 * @param sync         the sync worker: commit mode, polling, drains, backoff, retries, boot state
 * @param board        where the bulletin board is: a directory, {@code s3://} or {@code http(s)://}
 * @param remote       how a remote board is fetched and cached (null for a directory board)
 * @param layout       its layout
 * @param engineMode   {@code engine} or {@code host}
 * @param engine       SGLang paths and options
 * @param replicaRunId the {@code run_id} label shown in {@code /server_info}, or null
 * @param router       the router asked before each commit (sidecar-http.md §5.2), or null to commit alone
 */
public record SidecarConfig(ProxyServer.Config proxy, SyncConfig sync, BoardAddress board, RemoteBoardOptions remote,
                            BoardLayout layout, String engineMode, SglangSettings engine, String replicaRunId,
                            dev.stitch.sidecar.router.RouterLink router) {

    public SidecarConfig {
        Objects.requireNonNull(proxy, "proxy");
        Objects.requireNonNull(sync, "sync");
        Objects.requireNonNull(board, "board");
        if (board.isRemote()) {
            Objects.requireNonNull(remote, "a remote board needs its cache options");
        }
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(engine, "engine");
        if (!"engine".equals(engineMode) && !"host".equals(engineMode)) {
            throw new IllegalArgumentException("engine mode must be engine or host, not '" + engineMode + "'");
        }
        if ("host".equals(engineMode) && (engine.localCheckpointDir() == null || engine.baseCheckpointDir() == null)) {
            throw new IllegalArgumentException("host mode needs --local-checkpoint and --base-checkpoint");
        }
    }

    /** A sidecar that commits without asking a router. */
    public SidecarConfig(ProxyServer.Config proxy, SyncConfig sync, BoardAddress board, RemoteBoardOptions remote,
                         BoardLayout layout, String engineMode, SglangSettings engine, String replicaRunId) {
        this(proxy, sync, board, remote, layout, engineMode, engine, replicaRunId, null);
    }

    /** The same sidecar, asking {@code link} before each commit. */
    public SidecarConfig withRouter(dev.stitch.sidecar.router.RouterLink link) {
        return new SidecarConfig(proxy, sync, board, remote, layout, engineMode, engine, replicaRunId, link);
    }

    /** A sidecar of a board directory. */
    public SidecarConfig(ProxyServer.Config proxy, SyncConfig sync, Path boardRoot, BoardLayout layout, String engineMode,
                         SglangSettings engine, String replicaRunId) {
        this(proxy, sync, BoardAddress.of(boardRoot), null, layout, engineMode, engine, replicaRunId, null);
    }

    /** Where the versions are on local disk: the board directory, or a remote board's verified cache. */
    public Path boardRoot() {
        return board.isRemote() ? remote.cacheDir() : board.path();
    }
}
