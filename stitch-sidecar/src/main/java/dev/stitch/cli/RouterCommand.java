package dev.stitch.cli;

import dev.stitch.router.CommitLimit;
import dev.stitch.router.RollingUpdatePolicy;
import dev.stitch.router.RouterServer;
import dev.stitch.sidecar.proxy.ProxyServer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stitch router}: the version-aware router in front of a fleet of sidecars (docs/protocol/router.md). */
@Command(name = "router", mixinStandardHelpOptions = true,
        description = {"Routes each request to a replica whose sidecar serves a version its weight_version constraint "
                + "accepts now (least loaded among those, a session kept on its replica while it can), answers the "
                + "sidecar's own 409 when none can, and paces rolling updates through the sidecars' commit permission.",
            "Members: --replicas, --replicas-file (re-read on change), POST /add_worker?url=, POST /remove_worker?url=."})
public final class RouterCommand implements StitchSubcommand, java.util.concurrent.Callable<Integer> {

    @Option(names = "--listen", defaultValue = "127.0.0.1:8090", paramLabel = "HOST:PORT",
            description = "Where clients connect (default ${DEFAULT-VALUE}).")
    String listen;

    @Option(names = "--replicas", split = ",", paramLabel = "URL", description = "Sidecar base URLs, comma-separated.")
    List<String> replicas = new ArrayList<>();

    @Option(names = "--replicas-file", paramLabel = "FILE",
            description = "A file of sidecar URLs, one a line (# comments); re-read when it changes.")
    Path replicasFile;

    @Option(names = "--max-committing", defaultValue = "1", paramLabel = "N|P%",
            description = "Replicas allowed to commit a new version at once (default ${DEFAULT-VALUE}).")
    String maxCommitting;

    @Option(names = "--hold-previous", defaultValue = "0", paramLabel = "K",
            description = "Replicas kept on the previous version while requests pinned to it are in flight (default ${DEFAULT-VALUE}).")
    int holdPrevious;

    @Option(names = "--commit-retry-ms", defaultValue = "500", paramLabel = "MS",
            description = "retry_after_ms of a denied commit permission (default ${DEFAULT-VALUE}).")
    long commitRetryMs;

    @Option(names = "--versioned-routes", split = ",", paramLabel = "ROUTE",
            description = "The routes the sidecars gate (their versioned_routes); default generate, v1/chat/completions, v1/completions.")
    List<String> versionedRoutes = new ArrayList<>();

    @Option(names = "--max-request-body", converter = ByteSize.class, defaultValue = "64m", paramLabel = "SIZE",
            description = "Largest request body read (default ${DEFAULT-VALUE}).")
    long maxBody;

    @Option(names = "--upstream-timeout", converter = DurationConverter.class, defaultValue = "600s", paramLabel = "DURATION",
            description = "How long to wait for a sidecar's response head (default ${DEFAULT-VALUE}).")
    Duration upstreamTimeout;

    @Option(names = "--catch-up-wait", converter = DurationConverter.class, defaultValue = "500ms", paramLabel = "DURATION",
            description = "How long a request may wait for a replica that is catching up to its version, instead of a "
                    + "409 at once; 0 answers at once (default ${DEFAULT-VALUE}).")
    Duration catchUpWait;

    @Option(names = "--silent-relay-cut", converter = DurationConverter.class, defaultValue = "10s", paramLabel = "DURATION",
            description = "Once a replica's state polls fail, a response still relayed from it that sends nothing for "
                    + "this long is cut, so its client does not wait on a dead host (default ${DEFAULT-VALUE}).")
    Duration silentRelayCut;

    @Override
    public Integer call() throws Exception {
        int colon = listen.lastIndexOf(':');
        int port;
        try {
            port = Integer.parseInt(listen.substring(colon + 1));
        } catch (RuntimeException e) {
            throw new CliFailure("--listen must be HOST:PORT, not '" + listen + "'", 2);
        }
        if (replicas.isEmpty() && replicasFile == null) {
            throw new CliFailure("name the replicas with --replicas URL,... or --replicas-file FILE "
                    + "(or start with one and add the rest with POST /add_worker?url=)", 2);
        }
        RollingUpdatePolicy rolling;
        try {
            rolling = new RollingUpdatePolicy(CommitLimit.parse(maxCommitting), holdPrevious, commitRetryMs, 120_000);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage(), 2);
        }
        Set<String> routes = new LinkedHashSet<>();
        for (String r : versionedRoutes) {
            routes.add(r.strip().replaceAll("^/+|/+$", ""));
        }
        RouterServer.Config config = new RouterServer.Config(listen.substring(0, colon), port, replicas, replicasFile,
                routes.isEmpty() ? ProxyServer.DEFAULT_VERSIONED_ROUTES : routes, maxBody, upstreamTimeout, 30_000, 1_000,
                100_000, rolling, catchUpWait, silentRelayCut);
        try (RouterServer server = new RouterServer(config)) {
            System.out.println("router listening on " + server.address() + " for " + server.fleet().urls().size()
                    + " replica(s)");
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "stitch-router-shutdown"));
            stopped.await();
        } catch (IOException | IllegalArgumentException e) {
            throw new CliFailure(e.getMessage(), 2);
        }
        return 0;
    }
}
