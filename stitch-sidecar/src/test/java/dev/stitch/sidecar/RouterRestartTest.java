package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static dev.stitch.sidecar.RouterReplicas.awaitFleet;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.router.ReplicaView;
import dev.stitch.router.RouterServer;
import dev.stitch.sidecar.RouterReplicas.Replica;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The router restarted in the middle of a rolling update (docs/protocol/router.md §3, §4): while it is gone the
 * sidecars commit as they would alone (an unreachable router delays nothing), and a new router on the same port
 * with the same members rebuilds its whole view from the sidecars' state long polls, routes pinned requests to
 * replicas that serve the pinned version, and runs the next rolling update with the previous version held.
 */
class RouterRestartTest {
    private static final int REPLICAS = 3;

    @TempDir
    Path tmp;
    private RouterReplicas fleet;
    private RouterServer first;
    private RouterServer router;
    private final List<PinnedLoad> loads = new ArrayList<>();

    @AfterEach
    void closeAll() throws InterruptedException {
        for (PinnedLoad l : loads) {
            l.stop();
        }
        if (router != null) {
            router.close();
        }
        if (first != null) {
            first.close();
        }
        if (fleet != null) {
            fleet.close();
        }
    }

    /** A client of one router incarnation: its own connection pool, so no connection outlives the router it reached. */
    private static HttpClient client() {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();
    }

    private static Http.Reply post(HttpClient client, int port, String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        return new Http.Reply(r.statusCode(), r.body(), r.headers());
    }

    /**
     * Clients sending requests pinned to one version through the router, in a loop: every answer must be a 200
     * stamped with that version; a 409 is counted apart. After {@link #routerGoingAway} nothing is checked.
     */
    private final class PinnedLoad {
        final AtomicLong served = new AtomicLong();
        final AtomicLong conflicts = new AtomicLong();
        final List<String> unexpected = new CopyOnWriteArrayList<>();
        private final AtomicBoolean running = new AtomicBoolean(true);
        private volatile boolean routerGone;
        private final List<Thread> threads = new ArrayList<>();

        PinnedLoad(HttpClient client, int port, long version, int clients) {
            loads.add(this);
            for (int c = 0; c < clients; c++) {
                threads.add(Thread.ofVirtual().start(() -> {
                    while (running.get()) {
                        try {
                            Http.Reply r = post(client, port, "/generate", RouterReplicas.pinned(version, 3));
                            if (routerGone) {
                                continue;
                            }
                            if (r.status() == 200 && Long.toString(version).equals(r.header("x-stitch-weight-version-start"))) {
                                served.incrementAndGet();
                            } else if (r.status() == 409) {
                                conflicts.incrementAndGet();
                                unexpected.add("409 " + r.body());
                            } else {
                                unexpected.add(r.status() + " stamped " + r.header("x-stitch-weight-version-start")
                                        + " by " + r.header("x-stitch-router-replica") + ": " + r.body());
                            }
                        } catch (Exception e) {
                            if (!routerGone) {
                                unexpected.add(e.toString());
                            }
                        }
                    }
                }));
            }
        }

        /** From here on the router may vanish under the clients: their failures are expected. */
        void routerGoingAway() {
            routerGone = true;
        }

        /**
         * Stops the clients. Once the router went away a request may still be waiting for an answer that will not
         * come: it is interrupted rather than waited for.
         */
        void stop() throws InterruptedException {
            running.set(false);
            for (Thread t : threads) {
                if (routerGone) {
                    t.interrupt();
                }
                if (!t.join(Duration.ofSeconds(20))) {
                    throw new AssertionError("a pinned client did not stop: " + unexpected);
                }
            }
        }
    }

    private List<Replica> at(long version) {
        return fleet.replicas().stream().filter(r -> r.served() == version).toList();
    }

    /** The router's view of every member equals what its sidecar serves, and every member is routable. */
    private boolean viewMatchesTheSidecars(List<ReplicaView> views, long latest) {
        if (views.size() != REPLICAS) {
            return false;
        }
        for (int i = 0; i < REPLICAS; i++) {
            ReplicaView v = views.get(i);
            Replica r = fleet.replicas().get(i);
            if (!v.url().equals(r.url) || !v.routable() || v.servedVersion() != r.served() || v.latestSeenVersion() != latest) {
                return false;
            }
        }
        return true;
    }

    @Test
    void aRouterRestartedOnItsPortRebuildsItsViewAndRoutesPinnedRequestsByIt() throws Exception {
        fleet = new RouterReplicas(tmp, REPLICAS, Duration.ofMillis(20));
        fleet.publish(1);
        // below the ephemeral range, so that no bind(0) elsewhere takes the port while the router is down
        first = RouterReplicas.router(RouterReplicas.freePort(), fleet.urls(), 1);
        int port = first.address().getPort();
        fleet.startAll(URI.create("http://127.0.0.1:" + port));
        awaitFleet(first, 30_000, f -> f.size() == REPLICAS && f.stream().allMatch(v -> v.routable() && v.servedVersion() == 1),
                fleet::toString);

        // Mid-way through a rolling update to 2: requests pinned to 1 keep one replica on 1 (hold-previous 1).
        PinnedLoad onOne = new PinnedLoad(client(), port, 1, 2);
        assertTrue(eventually(10_000, () -> onOne.served.get() > 10), () -> onOne.unexpected.toString());
        fleet.publish(2);
        assertTrue(eventually(30_000, () -> at(2).size() == 2 && at(1).size() == 1), fleet::toString);
        Replica held = at(1).getFirst();
        assertTrue(eventually(10_000, () -> counter(held, "stitch_router_denials_total") >= 1), fleet::toString);
        assertEquals(0, counter(held, "stitch_router_unreachable_total"));

        // The router goes away while it holds that replica back.
        onOne.routerGoingAway();
        first.close();
        first = null; // RouterServer.close() is not idempotent: a second call throws RejectedExecutionException
        onOne.stop();
        assertEquals(List.of(), onOne.unexpected, "before the router went away");
        assertEquals(0, onOne.conflicts.get());

        // Without it the held replica commits as it would alone, and the whole fleet catches up to 3.
        assertTrue(eventually(20_000, () -> at(2).size() == REPLICAS), fleet::toString);
        assertTrue(counter(held, "stitch_router_unreachable_total") >= 1);
        fleet.publish(3);
        assertTrue(eventually(20_000, () -> at(3).size() == REPLICAS), fleet::toString);
        for (Replica r : fleet.replicas()) {
            assertTrue(counter(r, "stitch_router_unreachable_total") >= 1, r.toString());
            Http.Reply direct = Http.post(r.port, "/generate", RouterReplicas.pinned(3, 1));
            assertEquals(200, direct.status(), direct.body());
            assertEquals("3", direct.header("x-stitch-weight-version-start"));
        }

        // A new router on the same port with the same members: its view comes from the state long polls alone.
        router = RouterReplicas.router(port, fleet.urls(), 1);
        assertEquals(port, router.address().getPort());
        awaitFleet(router, 10_000, f -> viewMatchesTheSidecars(f, 3), fleet::toString);
        for (Replica r : fleet.replicas()) {
            assertEquals(3, Http.get(r.port, "/stitch/state").json().get("served_version").asLong());
        }
        HttpClient client = client();
        List<String> servedBy = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            Http.Reply r = post(client, port, "/generate", RouterReplicas.pinned(3, 1));
            assertEquals(200, r.status(), r.body());
            assertEquals("3", r.header("x-stitch-weight-version-start"));
            servedBy.add(r.header("x-stitch-router-replica"));
        }
        assertTrue(fleet.urls().containsAll(servedBy), servedBy.toString());
        Http.Reply atLeast = post(client, port, "/generate", "{\"text\": \"hi\", \"sampling_params\": {\"max_new_tokens\": 1}, "
                + "\"weight_version\": {\"min_required_version\": 3}}");
        assertEquals(200, atLeast.status(), atLeast.body());
        assertEquals("3", atLeast.header("x-stitch-weight-version-start"));
        // The view is also right about what nobody serves: answered by the router itself, not forwarded.
        Http.Reply old = post(client, port, "/generate", RouterReplicas.pinned(2, 1));
        assertEquals(409, old.status(), old.body());
        assertTrue(old.body().contains("WeightVersionTooOld"), old.body());
        assertNull(old.header("x-stitch-router-replica"));

        // The new router runs the next rolling update: one replica stays on 3 while requests pinned to 3 go on.
        Map<Replica, Long> deniedBefore = new HashMap<>();
        for (Replica r : fleet.replicas()) {
            deniedBefore.put(r, counter(r, "stitch_router_denials_total"));
        }
        PinnedLoad onThree = new PinnedLoad(client, port, 3, 2);
        assertTrue(eventually(10_000, () -> onThree.served.get() > 10), () -> onThree.unexpected.toString());
        fleet.publish(4);
        assertTrue(eventually(30_000, () -> at(4).size() == 2 && at(3).size() == 1), fleet::toString);
        Replica heldAgain = at(3).getFirst();
        // denied by the new router, not just by the first one before the restart
        assertTrue(eventually(10_000, () -> counter(heldAgain, "stitch_router_denials_total") > deniedBefore.get(heldAgain)),
                fleet::toString);
        long servedSoFar = onThree.served.get();
        assertTrue(eventually(10_000, () -> onThree.served.get() > servedSoFar + 10), () -> onThree.unexpected + " "
                + fleet + " " + RouterReplicas.fleetBody(port));
        assertEquals(1, at(3).size(), "the held replica moved on while pinned requests were in flight");
        onThree.stop();
        assertEquals(List.of(), onThree.unexpected);
        assertEquals(0, onThree.conflicts.get(), "a satisfiable pinned request got a 409 through the restarted router");

        // With the pinned load gone the held replica is granted its commit, and 4 is routed everywhere.
        assertTrue(eventually(30_000, () -> at(4).size() == REPLICAS), fleet::toString);
        awaitFleet(router, 10_000, f -> viewMatchesTheSidecars(f, 4), fleet::toString);
        for (int i = 0; i < 6; i++) {
            Http.Reply r = post(client, port, "/generate", RouterReplicas.pinned(4, 1));
            assertEquals(200, r.status(), r.body());
            assertEquals("4", r.header("x-stitch-weight-version-start"));
        }
    }

    private static long counter(Replica r, String name) {
        try {
            return r.counter(name);
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
