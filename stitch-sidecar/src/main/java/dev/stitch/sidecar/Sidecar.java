package dev.stitch.sidecar;
import dev.stitch.sidecar.control.ControlEndpoints;

import dev.stitch.board.BoardOptions;
import dev.stitch.board.BulletinBoard;
import dev.stitch.engine.SglangAdapters;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sync.AdmissionGate;
import dev.stitch.sync.BulletinBoardSource;
import dev.stitch.sync.EngineAdapter;
import dev.stitch.sync.SyncBoard;
import dev.stitch.sync.CommitPermission;
import dev.stitch.sync.SyncWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root of one replica's sidecar: board, engine adapter, admission gate, sync worker,
 * endpoints and the Netty proxy. {@link #start} binds the port before the first catch-up, so a port
 * clash is reported at once and {@code /health} answers 503 until the catch-up completes.
 */
public final class Sidecar implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Sidecar.class);

    private final SidecarConfig config;
    private final EngineAdapter engine;
    private final SyncWorker worker;
    private final ControlEndpoints endpoints;
    private final ProxyServer proxy;

    private Sidecar(SidecarConfig config, SyncBoard board, EngineAdapter engine, String softwareVersion) {
        this.config = config;
        this.engine = engine;
        AdmissionGate gate = new AdmissionGate(config.sync().bootRunId(), config.sync().bootVersion());
        CommitPermission permission = config.router() == null ? CommitPermission.ALWAYS : config.router().permission();
        this.worker = new SyncWorker(config.sync(), board, engine, gate, permission);
        this.endpoints = new ControlEndpoints(worker, config.replicaRunId(), softwareVersion);
        this.proxy = new ProxyServer(config.proxy(), gate, endpoints);
        this.endpoints.proxyStats(proxy::stats);
    }

    /** Builds the sidecar with the SGLang adapter of {@code config.engineMode()} and starts it. */
    public static Sidecar start(SidecarConfig config, String softwareVersion) {
        EngineAdapter engine = SglangAdapters.create(config.engineMode(), config.engine());
        return start(config, engine, softwareVersion);
    }

    /** Starts a sidecar around a given engine adapter. */
    public static Sidecar start(SidecarConfig config, EngineAdapter engine, String softwareVersion) {
        BulletinBoard board;
        try {
            board = BulletinBoard.open(config.board(), config.layout(), BoardOptions.defaults(), config.remote());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot open the board " + config.board() + ": " + e.getMessage(), e);
        }
        Sidecar s = new Sidecar(config, new BulletinBoardSource(board), engine, softwareVersion);
        s.proxy.start();
        LOG.info("listening on {}:{}, proxying {} ({} mode, {} commits), board {} ({} layout)",
                config.proxy().host(), s.proxy.port(), config.proxy().upstream(), config.engineMode(),
                config.sync().commitMode().label(), config.board(), config.layout().label());
        if (config.proxy().control().token() == null && !isLoopback(config.proxy().host())) {
            LOG.warn("listening on {} without a control token: anyone who reaches the port can call /wake and "
                    + "/rpc_sync_from_bulletin_board; set --control-token-file (security.md)", config.proxy().host());
        }
        if (config.router() != null) {
            LOG.info("asking router {} before each commit, as replica {}", config.router().url(),
                    config.router().replicaId());
        }
        s.worker.start();
        return s;
    }

    private static boolean isLoopback(String host) {
        try {
            return java.net.InetAddress.getByName(host).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    public SidecarConfig config() {
        return config;
    }

    /** The bound port. */
    public int port() {
        return proxy.port();
    }

    public SyncWorker worker() {
        return worker;
    }

    public ProxyServer proxy() {
        return proxy;
    }

    @Override
    public void close() {
        worker.close();
        endpoints.close();
        worker.commitPermission().close();
        proxy.close();
        engine.close();
    }
}
