package dev.stitch.cli;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.engine.SglangSettings;
import dev.stitch.sidecar.proxy.ConnectionLimits;
import dev.stitch.sidecar.proxy.ControlPolicy;
import dev.stitch.sidecar.proxy.ProxyServer;
import dev.stitch.sidecar.Sidecar;
import dev.stitch.sidecar.SidecarConfig;
import dev.stitch.sync.CommitMode;
import dev.stitch.sync.SyncConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import dev.stitch.sidecar.router.RouterLink;

/**
 * {@code stitch sidecar}: the version-aware proxy and weight-sync worker in front of one SGLang server
 * (docs/protocol/sidecar-http.md §4–5, docs/protocol/sync-and-engines.md §6–7, docs/protocol/cli-and-config.md §8). Every option also reads {@code STITCH_<NAME>}; a flag wins.
 */
@Command(name = "sidecar",
        mixinStandardHelpOptions = true,
        description = {
            "Run the weight-sync sidecar in front of one SGLang server: watch the bulletin board, apply new "
                    + "versions in order, and proxy requests that carry a weight_version constraint.",
            "Every option can also be set with the environment variable STITCH_<NAME> (e.g. STITCH_PORT, "
                    + "STITCH_UPSTREAM_URL, STITCH_ENGINE_MODE); a flag wins over the environment."
        })
public final class SidecarCommand implements Callable<Integer>, StitchSubcommand {

    @Option(names = "--board", defaultValue = "${env:STITCH_BOARD_ROOT}", paramLabel = "BOARD",
            description = "The bulletin board: a directory, s3://bucket/prefix, or an http(s):// prefix such as the "
                    + "datacenter's cache (env STITCH_BOARD_ROOT). Remote versions are fetched into --cache-dir and "
                    + "verified before the engine sees them.")
    String board;

    @picocli.CommandLine.Mixin
    RemoteBoardFlags remote;

    @Option(names = "--upstream", defaultValue = "${env:STITCH_UPSTREAM_URL}",
            description = "Engine base URL, e.g. http://127.0.0.1:30000 (env STITCH_UPSTREAM_URL).")
    String upstream;

    @Option(names = "--layout", defaultValue = "${env:STITCH_LAYOUT:-stitch}",
            description = "Board layout: stitch, slime or head (default ${DEFAULT-VALUE}).")
    String layout;

    @Option(names = "--mode", defaultValue = "${env:STITCH_ENGINE_MODE:-host}",
            description = "engine (patched SGLang applies sparse deltas) or host (stock SGLang reloads a local "
                    + "checkpoint kept current by the sidecar) (default ${DEFAULT-VALUE}; env STITCH_ENGINE_MODE).")
    String mode;

    @Option(names = "--commit-mode", defaultValue = "${env:STITCH_COMMIT_MODE:-quiesce}",
            description = "quiesce (drain everything, then reload) or in_place (pause the engine in place; "
                    + "only exact pins drain) (default ${DEFAULT-VALUE}).")
    String commitMode;

    @Option(names = "--local-checkpoint", defaultValue = "${env:STITCH_LOCAL_CHECKPOINT_DIR}",
            description = "Host mode: the local checkpoint copy the engine reloads (created if missing).")
    Path localCheckpoint;

    @Option(names = "--base-checkpoint", defaultValue = "${env:STITCH_BASE_CHECKPOINT_DIR}",
            description = "Host mode: the base checkpoint the local copy starts from.")
    Path baseCheckpoint;

    @Option(names = "--host", defaultValue = "${env:STITCH_HOST:-127.0.0.1}",
            description = "Listen address (default ${DEFAULT-VALUE}, loopback only; use 0.0.0.0 with "
                    + "--control-token-file to serve rollout clients on other hosts).")
    String host;

    @Option(names = "--port", defaultValue = "${env:STITCH_PORT:-8000}",
            description = "Listen port (default ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--run-id", defaultValue = "${env:STITCH_RUN_ID}",
            description = "Replica label shown as run_id in /server_info.")
    String runId;

    @Option(names = "--engine-board-root", defaultValue = "${env:STITCH_ENGINE_BOARD_ROOT}",
            description = "Engine mode: the board root as the engine sees it (default: --board).")
    Path engineBoardRoot;

    @Option(names = "--engine-base-checkpoint", defaultValue = "${env:STITCH_ENGINE_BASE_CHECKPOINT_DIR}",
            description = "Engine mode: the checkpoint a run switch reloads (default: model_path of /model_info).")
    Path engineBaseCheckpoint;

    @Option(names = "--state-dir", defaultValue = "${env:STITCH_STATE_DIR}",
            description = "Where sidecar_state.json is kept (default: <local>/.stitch in host mode; "
                    + "not persisted in engine mode).")
    Path stateDir;

    @Option(names = "--boot-version", defaultValue = "${env:STITCH_BOOT_VERSION:-0}",
            description = "Version the engine booted with (default ${DEFAULT-VALUE}).")
    long bootVersion;

    @Option(names = "--boot-run-id", defaultValue = "${env:STITCH_BOOT_RUN_ID}",
            description = "Run the engine booted with (unset: adopt the board's run at version 0).")
    String bootRunId;

    @Option(names = "--versioned-routes",
            defaultValue = "${env:STITCH_VERSIONED_ROUTES:-generate,v1/chat/completions,v1/completions}",
            description = "Comma-separated routes that are gated and stamped (default ${DEFAULT-VALUE}).")
    String versionedRoutes;

    @Option(names = "--poll-interval-s", defaultValue = "${env:STITCH_POLL_INTERVAL_S:-5.0}",
            description = "Board poll period in seconds; 0 disables polling (default ${DEFAULT-VALUE}).")
    double pollIntervalS;

    @Option(names = "--engine-probe-interval-s", defaultValue = "${env:STITCH_ENGINE_PROBE_INTERVAL_S:-1.0}",
            description = "Period of the engine probe (health and reported weight_version); a failed or changed "
                    + "probe turns readiness 503 until the engine's weights are re-established; 0 disables it "
                    + "(default ${DEFAULT-VALUE}).")
    double engineProbeIntervalS;

    @Option(names = "--min-refresh-interval-s", defaultValue = "${env:STITCH_MIN_REFRESH_INTERVAL_S:-1.0}",
            description = "Rate limit of board refreshes, except explicit wakes (default ${DEFAULT-VALUE}).")
    double minRefreshIntervalS;

    @Option(names = "--drain-timeout-s", defaultValue = "${env:STITCH_DRAIN_TIMEOUT_S:-60}",
            description = "Drain bound before in-flight requests are preempted; 0 = unbounded "
                    + "(default ${DEFAULT-VALUE}).")
    double drainTimeoutS;

    @Option(names = "--abort-grace-s", defaultValue = "${env:STITCH_ABORT_GRACE_S:-10}",
            description = "How long preempted requests get to finish before the commit fails "
                    + "(default ${DEFAULT-VALUE}).")
    double abortGraceS;

    @Option(names = "--backoff-initial-s", defaultValue = "${env:STITCH_BACKOFF_INITIAL_S:-1}",
            description = "First retry delay after a failed pass (default ${DEFAULT-VALUE}).")
    double backoffInitialS;

    @Option(names = "--backoff-max-s", defaultValue = "${env:STITCH_BACKOFF_MAX_S:-60}",
            description = "Longest retry delay (default ${DEFAULT-VALUE}).")
    double backoffMaxS;

    @Option(names = "--arrival-timeout-s", defaultValue = "${env:STITCH_ARRIVAL_TIMEOUT_S:-600}",
            description = "Remote boards: how long the files of a version the pointer already names may be missing "
                    + "(replication or a cache still filling) before the wait becomes a sync error; meanwhile the "
                    + "sidecar retries with the backoff and reports waiting_for_arrival (default ${DEFAULT-VALUE}).")
    double arrivalTimeoutS;

    @Option(names = "--commit-retries", defaultValue = "${env:STITCH_COMMIT_RETRIES:-2}",
            description = "Commit retries after the engine started changing weights (default ${DEFAULT-VALUE}).")
    int commitRetries;

    @Option(names = "--flush-retries", defaultValue = "${env:STITCH_FLUSH_RETRIES:-10}",
            description = "Retries of a cache flush refused while requests run (default ${DEFAULT-VALUE}).")
    int flushRetries;

    @Option(names = "--max-replay-versions", defaultValue = "${env:STITCH_MAX_REPLAY_VERSIONS:-8}",
            description = "Longest delta replay preferred over loading an anchor (default ${DEFAULT-VALUE}).")
    int maxReplayVersions;

    @Option(names = "--require-checksums", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:STITCH_REQUIRE_CHECKSUMS:-false}",
            description = "Refuse artifacts without size_bytes/checksum (default ${DEFAULT-VALUE}).")
    boolean requireChecksums;

    @Option(names = "--upstream-timeout-s", defaultValue = "${env:STITCH_UPSTREAM_TIMEOUT_S:-3600}",
            description = "Total time one engine call may take (default ${DEFAULT-VALUE}).")
    double upstreamTimeoutS;

    @Option(names = "--upstream-connect-timeout-s", defaultValue = "${env:STITCH_UPSTREAM_CONNECT_TIMEOUT_S:-10}",
            description = "Connect timeout to the engine (default ${DEFAULT-VALUE}).")
    double upstreamConnectTimeoutS;

    @Option(names = "--engine-start-timeout-s", defaultValue = "${env:STITCH_ENGINE_START_TIMEOUT_S:-1800}",
            description = "How long startup waits for the engine's /health (default ${DEFAULT-VALUE}).")
    double engineStartTimeoutS;

    @Option(names = "--max-request-body-bytes", defaultValue = "${env:STITCH_MAX_REQUEST_BODY_BYTES:-64m}",
            description = "Larger request bodies get 413; k/m/g suffixes (default ${DEFAULT-VALUE}).")
    String maxRequestBodyBytes;

    @Option(names = "--header-timeout-s", defaultValue = "${env:STITCH_HEADER_TIMEOUT_S:-10}",
            description = "A connection must send a complete request head within this many seconds of opening "
                    + "(or of a later request's first byte), else it is closed (default ${DEFAULT-VALUE}).")
    double headerTimeoutS;

    @Option(names = "--idle-timeout-s", defaultValue = "${env:STITCH_IDLE_TIMEOUT_S:-75}",
            description = "A keep-alive connection with no request in progress is closed after this many seconds; "
                    + "also the longest pause inside a request body (default ${DEFAULT-VALUE}).")
    double idleTimeoutS;

    @Option(names = "--max-connections", defaultValue = "${env:STITCH_MAX_CONNECTIONS:-8192}",
            description = "Client connections held at once; at the cap a new one closes the longest-idle one, and "
                    + "when all are busy a small reserve answers only sidecar routes such as /health "
                    + "(default ${DEFAULT-VALUE}).")
    int maxConnections;

    @Option(names = "--control-token", defaultValue = "${env:STITCH_CONTROL_TOKEN}",
            description = "Bearer token required by /wake and /rpc_sync_from_bulletin_board (unset: open; "
                    + "prefer --control-token-file, which keeps the token out of the process list).")
    String controlToken;

    @Option(names = "--control-token-file", defaultValue = "${env:STITCH_CONTROL_TOKEN_FILE}",
            description = "File holding the control token (surrounding whitespace ignored).")
    Path controlTokenFile;

    @Option(names = "--router", defaultValue = "${env:STITCH_ROUTER_URL}", paramLabel = "URL",
            description = "A version-aware router (stitch router) to ask before each commit, so that it can roll a "
                    + "new version across its replicas (POST URL/stitch/commit_permission, sidecar-http.md 5.2); "
                    + "without an answer within 2 s the replica commits anyway.")
    String router;

    @Option(names = "--router-token-file", defaultValue = "${env:STITCH_ROUTER_TOKEN_FILE}", paramLabel = "FILE",
            description = "File holding the bearer token sent to --router.")
    Path routerTokenFile;

    @Option(names = "--replica-id", defaultValue = "${env:STITCH_REPLICA_ID}", paramLabel = "ID",
            description = "This replica's id in commit-permission questions: the URL the router knows it by "
                    + "(default http://HOST:PORT of --host and --port).")
    String replicaId;

    @Option(names = "--control-refresh-rate", defaultValue = "${env:STITCH_CONTROL_REFRESH_RATE:-5}",
            description = "Calls per second of /wake and /rpc_sync_from_bulletin_board, together; beyond it 429; "
                    + "0 = unlimited (default ${DEFAULT-VALUE}).")
    double controlRefreshRate;

    @Option(names = "--control-refresh-burst", defaultValue = "${env:STITCH_CONTROL_REFRESH_BURST:-10}",
            description = "Calls of those routes allowed at once before the rate applies (default ${DEFAULT-VALUE}).")
    int controlRefreshBurst;

    @Option(names = "--stream-end-comment", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:STITCH_STREAM_END_COMMENT:-true}",
            description = "Append ': x-stitch-weight-version-end=<v>' to SSE streams (default ${DEFAULT-VALUE}).")
    boolean streamEndComment;

    @Option(names = "--partial-reload", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:STITCH_PARTIAL_RELOAD:-false}",
            description = "Host mode: send weight_names with reloads (default ${DEFAULT-VALUE}).")
    boolean partialReload;

    @Option(names = "--probe-delta-receiver", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:STITCH_PROBE_DELTA_RECEIVER:-true}",
            description = "Engine mode: check at startup that the engine accepts load_format=delta "
                    + "(default ${DEFAULT-VALUE}).")
    boolean probeDeltaReceiver;

    @Option(names = "--debug-requests", arity = "0..1", fallbackValue = "true",
            defaultValue = "${env:STITCH_DEBUG_REQUESTS:-false}",
            description = "Log a start and an end line per request (default ${DEFAULT-VALUE}).")
    boolean debugRequests;

    @Override
    public Integer call() throws Exception {
        SidecarConfig config = config();
        Sidecar sidecar;
        try {
            sidecar = Sidecar.start(config, new VersionInfo().getVersion()[0]);
        } catch (UncheckedIOException e) {
            throw new CliFailure(e.getMessage());
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            sidecar.close();
            stopped.countDown();
        }, "stitch-sidecar-shutdown"));
        stopped.await();
        return 0;
    }

    /** Validates the options (flags, else {@code STITCH_<NAME>} variables) and groups them. */
    public SidecarConfig config() {
        if (board == null) {
            throw new CliFailure("--board BOARD is required (or set STITCH_BOARD_ROOT)");
        }
        BoardAddress address = RemoteBoardFlags.address(board.strip());
        RemoteBoardOptions remoteOptions = address.isRemote() ? remote.options(address) : null;
        Path boardRoot = address.isRemote() ? remoteOptions.cacheDir() : address.path();
        if (upstream == null || upstream.isBlank()) {
            throw new CliFailure("--upstream URL is required (or set STITCH_UPSTREAM_URL)");
        }
        URI engineUrl;
        try {
            engineUrl = URI.create(upstream.strip());
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--upstream is not a URL: " + upstream);
        }
        if (engineUrl.getScheme() == null || engineUrl.getHost() == null) {
            throw new CliFailure("--upstream must look like http://host:port, not '" + upstream + "'");
        }
        BoardLayout boardLayout;
        CommitMode commit;
        try {
            boardLayout = BoardLayout.parse(layout);
            commit = CommitMode.parse(commitMode.strip().toLowerCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage());
        }
        String engineMode = mode.strip().toLowerCase(Locale.ROOT);
        if (!engineMode.equals("engine") && !engineMode.equals("host")) {
            throw new CliFailure("--mode must be engine or host, not '" + mode + "'");
        }
        if (engineMode.equals("host") && (localCheckpoint == null || baseCheckpoint == null)) {
            throw new CliFailure("--mode host needs --local-checkpoint DIR and --base-checkpoint DIR");
        }
        requireNonNegative("--poll-interval-s", pollIntervalS);
        requireNonNegative("--min-refresh-interval-s", minRefreshIntervalS);
        requireNonNegative("--drain-timeout-s", drainTimeoutS);
        requireNonNegative("--abort-grace-s", abortGraceS);
        requireNonNegative("--backoff-initial-s", backoffInitialS);
        requireNonNegative("--backoff-max-s", backoffMaxS);
        requireNonNegative("--arrival-timeout-s", arrivalTimeoutS);
        requireNonNegative("--commit-retries", commitRetries);
        requireNonNegative("--flush-retries", flushRetries);
        requireNonNegative("--max-replay-versions", maxReplayVersions);
        requireNonNegative("--boot-version", bootVersion);
        requireNonNegative("--engine-probe-interval-s", engineProbeIntervalS);
        if (upstreamTimeoutS <= 0 || upstreamConnectTimeoutS <= 0 || engineStartTimeoutS <= 0) {
            throw new CliFailure("timeouts must be positive");
        }
        if (port < 0 || port > 65535) {
            throw new CliFailure("--port must be 0..65535, not " + port);
        }
        if (!(headerTimeoutS > 0) || !(idleTimeoutS > 0)) {
            throw new CliFailure("--header-timeout-s and --idle-timeout-s must be positive");
        }
        if (maxConnections <= 0) {
            throw new CliFailure("--max-connections must be positive, not " + maxConnections);
        }
        requireNonNegative("--control-refresh-rate", controlRefreshRate);
        if (controlRefreshBurst <= 0) {
            throw new CliFailure("--control-refresh-burst must be positive, not " + controlRefreshBurst);
        }
        Duration connect = seconds(upstreamConnectTimeoutS);
        Duration total = seconds(upstreamTimeoutS);
        ProxyServer.Config proxy = ProxyServer.Config.defaults(engineUrl)
                .withListen(host, port)
                .withVersionedRoutes(ProxyServer.Config.parseRoutes(versionedRoutes))
                .withMaxRequestBodyBytes(ByteSize.parse("--max-request-body-bytes", maxRequestBodyBytes))
                .withTimeouts(connect, total)
                .withStreamEndComment(streamEndComment)
                .withDebugRequests(debugRequests)
                .withLimits(new ConnectionLimits(seconds(headerTimeoutS), seconds(idleTimeoutS), maxConnections))
                .withControl(new ControlPolicy(controlToken(), controlRefreshRate, controlRefreshBurst));
        Path state = stateDir;
        if (state == null && engineMode.equals("host")) {
            state = localCheckpoint.resolve(".stitch");
        }
        SyncConfig sync = SyncConfig.defaults()
                .withCommitMode(commit)
                .withPolling(pollIntervalS, minRefreshIntervalS)
                .withEngineProbeInterval(engineProbeIntervalS)
                .withDrain(drainTimeoutS, abortGraceS)
                .withBackoff(backoffInitialS, backoffMaxS)
                .withArrivalTimeout(arrivalTimeoutS)
                .withLimits(commitRetries, maxReplayVersions, requireChecksums, engineStartTimeoutS)
                .withBoot(blankToNull(bootRunId), bootVersion, state);
        SglangSettings engine = SglangSettings.of(engineUrl, boardRoot)
                .withEnginePaths(engineBoardRoot, engineBaseCheckpoint)
                .withHostCheckpoints(localCheckpoint, baseCheckpoint)
                .withOptions(flushRetries, partialReload, probeDeltaReceiver)
                .withTimeouts(connect, total);
        try {
            return new SidecarConfig(proxy, sync, address, remoteOptions, boardLayout, engineMode, engine,
                    blankToNull(runId), routerLink());
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage());
        }
    }

    /** The router of --router, or null when none is configured (commits go ahead alone, as before). */
    private RouterLink routerLink() {
        String url = blankToNull(router);
        if (url == null) {
            if (routerTokenFile != null) {
                throw new CliFailure("--router-token-file needs --router");
            }
            return null;
        }
        URI routerUrl;
        try {
            routerUrl = URI.create(url);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--router is not a URL: " + url);
        }
        if (routerUrl.getScheme() == null || routerUrl.getHost() == null) {
            throw new CliFailure("--router must look like http://host:port, not '" + url + "'");
        }
        String token = null;
        if (routerTokenFile != null) {
            try {
                token = Files.readString(routerTokenFile, StandardCharsets.UTF_8).strip();
            } catch (IOException e) {
                throw new CliFailure("cannot read --router-token-file " + routerTokenFile + ": " + e.getMessage());
            }
            if (token.isEmpty()) {
                throw new CliFailure("--router-token-file " + routerTokenFile + " is empty");
            }
        }
        String id = blankToNull(replicaId);
        // the router knows its replicas by URL (docs/protocol/router.md §4), so the default id is this sidecar's URL
        return new RouterLink(routerUrl, token, id == null ? "http://" + host + ":" + port : id, RouterLink.DEFAULT_TIMEOUT);
    }

    private String controlToken() {
        String inline = blankToNull(controlToken);
        if (inline != null && controlTokenFile != null) {
            throw new CliFailure("give either --control-token or --control-token-file, not both");
        }
        if (controlTokenFile == null) {
            return inline;
        }
        String fromFile;
        try {
            fromFile = Files.readString(controlTokenFile, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new CliFailure("cannot read --control-token-file " + controlTokenFile + ": " + e.getMessage());
        }
        if (fromFile.isEmpty()) {
            throw new CliFailure("--control-token-file " + controlTokenFile + " is empty");
        }
        return fromFile;
    }

    private static void requireNonNegative(String option, double v) {
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw new CliFailure(option + " must be a non-negative number, not " + v);
        }
    }

    private static Duration seconds(double s) {
        return Duration.ofNanos((long) (s * 1e9));
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }
}
