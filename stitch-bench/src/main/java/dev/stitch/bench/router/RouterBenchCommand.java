package dev.stitch.bench.router;

import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.router.CommitLimit;
import dev.stitch.router.RollingUpdatePolicy;
import dev.stitch.router.RouterServer;
import dev.stitch.sidecar.proxy.ProxyServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench router}: how many requests pinned to a version that some replica serves at that moment
 * still get a 409, sent straight to replicas in turn versus through the router (docs/protocol/router.md §2),
 * while a rolling update moves the fleet one replica at a time. Replicas are {@link SimulatedReplica}s, so the
 * figure measures routing alone, not engines.
 */
@Command(name = "router", mixinStandardHelpOptions = true,
        description = "409 rate of satisfiable exact-pinned requests during a rolling update: direct round-robin vs the "
                + "version-aware router, over simulated replicas.")
public final class RouterBenchCommand implements BenchSubcommand, Runnable {

    @Option(names = "--replicas", defaultValue = "4", paramLabel = "N", description = "Replicas (default ${DEFAULT-VALUE}).")
    int replicaCount;

    @Option(names = "--versions", defaultValue = "4", paramLabel = "V",
            description = "The update rolls from version 1 to V (default ${DEFAULT-VALUE}).")
    int versions;

    @Option(names = "--requests-per-step", defaultValue = "100", paramLabel = "R",
            description = "Requests per path between two steps of the update (default ${DEFAULT-VALUE}).")
    int perStep;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"router\", \"results\": [...]} to FILE.")
    Path json;

    @Override
    public void run() {
        if (replicaCount < 2 || versions < 2 || perStep < 1) {
            throw new IllegalArgumentException("--replicas and --versions must be >= 2, --requests-per-step >= 1");
        }
        List<SimulatedReplica> replicas = new ArrayList<>();
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        long[] direct = new long[2];
        long[] routed = new long[2];
        try {
            List<String> urls = new ArrayList<>();
            for (int i = 0; i < replicaCount; i++) {
                SimulatedReplica r = new SimulatedReplica(1);
                replicas.add(r);
                urls.add(r.url());
            }
            // Simulated replicas never ask for commit permission; the router still needs a policy to answer with.
            RollingUpdatePolicy rolling = new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 500, 120_000);
            try (RouterServer router = new RouterServer(new RouterServer.Config("127.0.0.1", 0, urls, null,
                    ProxyServer.DEFAULT_VERSIONED_ROUTES, 1 << 20, Duration.ofSeconds(30), 30_000, 100, 10_000,
                    rolling))) {
                router.awaitFleet(f -> f.stream().allMatch(v -> v.routable()));
                String front = "http://127.0.0.1:" + router.address().getPort();
                int turn = 0;
                for (long v = 2; v <= versions; v++) {
                    for (SimulatedReplica r : replicas) {
                        r.beginCommit(v);
                        turn = step(http, replicas, front, direct, routed, turn);
                        r.finishCommit(v);
                        turn = step(http, replicas, front, direct, routed, turn);
                    }
                }
                BenchResults results = new BenchResults("router");
                row(results, "direct_round_robin", direct, 0);
                row(results, "router", routed, router.metrics().reroutedTotal());
                System.out.println("rolling update 1 -> " + versions + " over " + replicaCount
                        + " simulated replicas; every request pins a version some replica serves at that moment");
                results.printTable(System.out, "path", "requests", "conflicts_409", "conflict_rate", "rerouted");
                if (json != null) {
                    results.writeJson(json);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("router bench failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            replicas.forEach(SimulatedReplica::close);
        }
    }

    /** {@code perStep} requests on each path, each pinned to one of the versions served right now, in turn. */
    private int step(HttpClient http, List<SimulatedReplica> replicas, String front, long[] direct, long[] routed, int turn)
            throws IOException, InterruptedException {
        TreeSet<Long> served = new TreeSet<>();
        for (SimulatedReplica r : replicas) {
            served.add(r.served());
        }
        List<Long> pins = new ArrayList<>(served);
        for (int i = 0; i < perStep; i++, turn++) {
            long pin = pins.get(turn % pins.size());
            count(direct, send(http, replicas.get(turn % replicas.size()).url(), pin));
            count(routed, send(http, front, pin));
        }
        return turn;
    }

    private static int send(HttpClient http, String base, long pin) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/generate"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":" + pin + "}}"))
                .build();
        return http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    private static void count(long[] tally, int status) {
        tally[0]++;
        if (status == 409) {
            tally[1]++;
        }
    }

    private static void row(BenchResults results, String path, long[] tally, long rerouted) {
        var row = results.row();
        row.put("path", path);
        row.put("requests", tally[0]);
        row.put("conflicts_409", tally[1]);
        row.put("conflict_rate", String.format("%.4f", tally[1] / (double) tally[0]));
        row.put("rerouted", rerouted);
    }
}
