package dev.stitch.router;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint.Verdict;
import dev.stitch.sidecar.proxy.ProxyServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The router end to end over real sockets, in front of three {@link FakeReplica} sidecars (the sidecar's own
 * {@code /stitch/state} is another branch's work; the fakes implement its contract). Every wait is on a state the
 * router reports, never on time.
 */
class RouterServerTest {
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final List<FakeReplica> replicas = new ArrayList<>();
    private RouterServer router;

    @AfterEach
    void stop() {
        if (router != null) {
            router.close();
        }
        replicas.forEach(FakeReplica::close);
    }

    private RouterServer start(long... versions) throws Exception {
        return start(new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 200, 60_000), null, versions);
    }

    private RouterServer start(RollingUpdatePolicy rolling, Path file, long... versions) throws Exception {
        List<String> urls = new ArrayList<>();
        for (long v : versions) {
            FakeReplica r = new FakeReplica(v);
            replicas.add(r);
            urls.add(r.url());
        }
        router = new RouterServer(new RouterServer.Config("127.0.0.1", 0, file == null ? urls : List.of(), file,
                ProxyServer.DEFAULT_VERSIONED_ROUTES, 1 << 20, Duration.ofSeconds(30), 2_000, 50, 1_000, rolling)
                .withSilentRelayCut(Duration.ofMillis(300)));
        if (file == null) {
            awaitAllServing();
        }
        return router;
    }

    private void awaitAllServing() throws InterruptedException {
        router.awaitFleet(f -> f.stream().allMatch(ReplicaView::routable));
    }

    private HttpResponse<String> send(String method, String path, String body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.address().getPort() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) {
            b.headers(headers);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> generate(String weightVersion, String... headers) throws Exception {
        String body = weightVersion == null ? "{\"text\":\"hi\"}" : "{\"text\":\"hi\",\"weight_version\":" + weightVersion + "}";
        return send("POST", "/generate", body, headers.length == 0 ? new String[] {"Content-Type", "application/json"} : headers);
    }

    private static String servedBy(HttpResponse<?> rsp) {
        return rsp.headers().firstValue(RouterRoutes.REPLICA_HEADER).orElse(null);
    }

    @Test
    void exactPinsReachTheReplicaServingThatVersion() throws Exception {
        start(1, 2, 3);
        for (int v = 1; v <= 3; v++) {
            HttpResponse<String> rsp = generate("{\"exact_version\":" + v + "}");
            assertEquals(200, rsp.statusCode(), rsp.body());
            assertEquals(replicas.get(v - 1).url(), servedBy(rsp));
            assertEquals(Integer.toString(v), rsp.headers().firstValue("x-stitch-weight-version-start").orElseThrow());
        }
        assertEquals(3, router.metrics().routedTotal());
    }

    @Test
    void minimumAndUnconstrainedGoToTheLeastLoaded() throws Exception {
        start(1, 3, 3);
        replicas.get(1).report(3, 5, false, "{}");
        replicas.get(2).report(3, 1, false, "{}");
        replicas.get(0).report(1, 0, false, "{}");
        router.awaitFleet(f -> f.get(1).activeRequests() == 5 && f.get(2).activeRequests() == 1);
        assertEquals(replicas.get(2).url(), servedBy(generate("{\"min_required_version\":2}")));
        assertEquals(replicas.get(0).url(), servedBy(generate(null)));
    }

    @Test
    void unsatisfiableConstraintsGetTheSidecarsConflictBody() throws Exception {
        start(1, 2, 2);
        HttpResponse<String> ahead = generate("{\"exact_version\":5}");
        assertEquals(409, ahead.statusCode());
        assertEquals(new String(ProxyErrors.versionConflict(Verdict.NOT_READY, 2, 5, 2), StandardCharsets.UTF_8), ahead.body());
        assertTrue(ahead.headers().firstValue("Retry-After").isEmpty(), "nobody has seen version 5");

        replicas.get(0).report(5, 0, true, "{}");
        router.awaitFleet(f -> f.get(0).committing());
        HttpResponse<String> catchingUp = generate("{\"exact_version\":5}");
        assertEquals(409, catchingUp.statusCode());
        assertEquals("1", catchingUp.headers().firstValue("Retry-After").orElseThrow());

        replicas.get(0).serve(3);
        replicas.get(0).report(3, 0, false, "{}");
        router.awaitFleet(f -> f.get(0).servedVersion() == 3 && !f.get(0).committing());
        HttpResponse<String> old = generate("{\"exact_version\":1}");
        assertEquals(409, old.statusCode());
        assertTrue(old.body().contains("\"type\":\"WeightVersionTooOld\""), old.body());
        assertEquals(2, router.metrics().rejections(409, "WeightVersionNotReady"));
        assertEquals(1, router.metrics().rejections(409, "WeightVersionTooOld"));
    }

    @Test
    void aPinToTheVersionAReplicaIsCommittingWaitsForItInsteadOf409() throws Exception {
        start(1, 1, 1);
        replicas.get(0).report(2, 0, true, "{}");
        router.awaitFleet(f -> f.get(0).committing());
        java.util.concurrent.CompletableFuture<HttpResponse<String>> pinned = java.util.concurrent.CompletableFuture
                .supplyAsync(() -> {
                    try {
                        return generate("{\"exact_version\":2}");
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
        // the request is parked at the router, not answered
        Thread.sleep(100);
        assertFalse(pinned.isDone(), "a request for a version a replica is committing waits for the view");
        replicas.get(0).serve(2);
        replicas.get(0).report(2, 0, false, "{}");
        HttpResponse<String> rsp = pinned.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, rsp.statusCode(), rsp.body());
        assertEquals(replicas.get(0).url(), servedBy(rsp));
        assertEquals(0, router.metrics().rejections(409, "WeightVersionNotReady"));
    }

    @Test
    void invalidConstraintIsRefusedAtTheRouterAsTheSidecarWould() throws Exception {
        start(1, 1, 1);
        HttpResponse<String> rsp = generate("{\"exact_version\":-1}");
        assertEquals(400, rsp.statusCode());
        assertTrue(rsp.body().contains("InvalidWeightVersion"), rsp.body());
        assertEquals(0, router.metrics().routedTotal());
    }

    @Test
    void sessionsStayOnTheirReplicaUntilItCannotServeThem() throws Exception {
        start(2, 2, 2);
        String first = servedBy(generate("{\"exact_version\":2}", "Content-Type", "application/json", "x-stitch-session", "s1"));
        int firstIndex = replicas.stream().map(FakeReplica::url).toList().indexOf(first);
        // make the session's replica the busiest: affinity still wins
        replicas.get(firstIndex).report(2, 9, false, "{}");
        router.awaitFleet(f -> f.get(firstIndex).activeRequests() == 9);
        assertEquals(first, servedBy(generate("{\"exact_version\":2}", "Content-Type", "application/json", "x-stitch-session", "s1")));
        replicas.get(firstIndex).serve(3);
        router.awaitFleet(f -> f.get(firstIndex).servedVersion() == 3);
        String moved = servedBy(generate("{\"exact_version\":2}", "Content-Type", "application/json", "x-stitch-session", "s1"));
        assertFalse(first.equals(moved));
        String metrics = send("GET", "/metrics", null).body();
        assertTrue(metrics.contains("stitch_router_affinity_total{outcome=\"kept\"} 1"), metrics);
        assertTrue(metrics.contains("stitch_router_affinity_total{outcome=\"broken\"} 1"), metrics);
    }

    @Test
    void aStaleViewCostsOneReroute() throws Exception {
        start(2, 2, 2);
        replicas.get(1).report(2, 3, false, "{}");
        replicas.get(2).report(2, 3, false, "{}");
        router.awaitFleet(f -> f.get(1).activeRequests() == 3 && f.get(2).activeRequests() == 3);
        replicas.get(0).serveSilently(3);
        HttpResponse<String> rsp = generate("{\"exact_version\":2}");
        assertEquals(200, rsp.statusCode(), rsp.body());
        assertFalse(replicas.get(0).url().equals(servedBy(rsp)));
        assertEquals(1, router.metrics().reroutedTotal());
        assertTrue(send("GET", "/metrics", null).body().contains("stitch_router_rerouted_total 1"));
    }

    @Test
    void aReplicaWhoseStatePollFailsIsDrainedAndReadmitted() throws Exception {
        start(2, 2, 2);
        replicas.get(0).failState(true);
        router.awaitFleet(f -> !f.get(0).reachable());
        for (int i = 0; i < 5; i++) {
            assertFalse(replicas.get(0).url().equals(servedBy(generate(null))));
        }
        assertTrue(send("GET", "/fleet", null).body().contains("\"state\":\"unreachable\""));
        replicas.get(0).failState(false);
        router.awaitFleet(f -> f.get(0).routable());
        assertEquals(replicas.get(0).url(), servedBy(generate(null)));
    }

    @Test
    void streamsArePassedThroughAsTheyArrive() throws Exception {
        start(4, 4, 4);
        for (FakeReplica r : replicas) {
            r.streamHold = new CountDownLatch(1);
        }
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.address().getPort() + "/generate"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"stream\":true,\"weight_version\":{\"exact_version\":4}}"))
                .header("Content-Type", "application/json").build();
        HttpResponse<InputStream> rsp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, rsp.statusCode());
        assertEquals("text/event-stream", rsp.headers().firstValue("content-type").orElseThrow());
        try (BufferedReader in = new BufferedReader(new InputStreamReader(rsp.body(), StandardCharsets.UTF_8))) {
            // the first event arrives while the replica still holds the rest: nothing is buffered
            assertEquals("data: {\"text\":\"first\"}", in.readLine());
            assertEquals("", in.readLine());
            replicas.forEach(r -> r.streamHold.countDown());
            assertEquals("data: [DONE]", in.readLine());
        }
    }

    @Test
    void aSilentStreamFromAReplicaWhosePollsFailIsCut() throws Exception {
        start(4, 4, 4);
        for (FakeReplica r : replicas) {
            r.streamHold = new CountDownLatch(1);
        }
        try {
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.address().getPort() + "/generate"))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"stream\":true,\"weight_version\":{\"exact_version\":4}}"))
                    .header("Content-Type", "application/json").build();
            HttpResponse<InputStream> rsp = client.send(req, HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, rsp.statusCode());
            String servedBy = servedBy(rsp);
            FakeReplica serving = replicas.stream().filter(r -> r.url().equals(servedBy)).findFirst().orElseThrow();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(rsp.body(), StandardCharsets.UTF_8))) {
                assertEquals("data: {\"text\":\"first\"}", in.readLine());
                // the replica stops answering polls while its stream is silent: the router cuts the stream
                serving.failState(true);
                StringBuilder rest = new StringBuilder();
                assertThrows(IOException.class, () -> {
                    String line;
                    while ((line = in.readLine()) != null) {
                        rest.append(line).append('\n');
                    }
                }, "a cut chunked stream ends without its last chunk");
                assertFalse(rest.toString().contains("[DONE]"), rest.toString());
            }
            assertTrue(send("GET", "/metrics", null).body().contains("stitch_router_relays_cut_total 1"));
        } finally {
            replicas.forEach(r -> r.streamHold.countDown());
        }
    }

    @Test
    void workerRoutesChangeTheMembership() throws Exception {
        start(1, 1);
        FakeReplica third = new FakeReplica(1);
        replicas.add(third);
        HttpResponse<String> added = send("POST", "/add_worker?url=" + third.url(), null);
        assertEquals(200, added.statusCode());
        assertTrue(added.body().contains("\"changed\":true"), added.body());
        router.awaitFleet(f -> f.size() == 3 && f.stream().allMatch(ReplicaView::routable));
        String listed = send("GET", "/list_workers", null).body();
        assertTrue(listed.startsWith("{\"urls\":[") && listed.contains(third.url()), listed);
        assertEquals(200, send("POST", "/remove_worker?url=" + replicas.get(0).url(), null).statusCode());
        assertFalse(send("GET", "/list_workers", null).body().contains(replicas.get(0).url() + "\""));
        assertEquals(400, send("POST", "/add_worker", null).statusCode());
        assertEquals(400, send("POST", "/add_worker?url=ftp://x", null).statusCode());
    }

    @Test
    void theReplicasFileIsReReadWhenItChanges(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("replicas.txt");
        FakeReplica a = new FakeReplica(1);
        FakeReplica b = new FakeReplica(1);
        replicas.add(a);
        replicas.add(b);
        Files.writeString(file, "# fleet\n" + a.url() + "\n");
        start(new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 200, 60_000), file);
        router.awaitFleet(f -> f.size() == 1 && f.get(0).routable());
        Files.writeString(file, b.url() + "\n\n# a left\n");
        router.awaitFleet(f -> f.size() == 1 && f.get(0).url().equals(b.url()) && f.get(0).routable());
        assertEquals(b.url(), servedBy(generate(null)));
    }

    @Test
    void commitPermissionFollowsTheRollingUpdatePolicy() throws Exception {
        start(new RollingUpdatePolicy(CommitLimit.parse("1"), 1, 300, 60_000), null, 1, 1, 1);
        String a = replicas.get(0).url();
        String b = replicas.get(1).url();
        String c = replicas.get(2).url();
        assertEquals("{\"granted\":true}", send("POST", "/stitch/commit_permission",
                "{\"replica\":\"" + a + "\",\"from\":1,\"to\":2}").body());
        assertEquals("{\"granted\":false,\"retry_after_ms\":300}", send("POST", "/stitch/commit_permission",
                "{\"replica\":\"" + b + "/\",\"from\":1,\"to\":2}").body());
        replicas.get(0).serve(2);
        replicas.get(1).report(1, 1, false, "{\"1\":2}");
        router.awaitFleet(f -> f.get(0).servedVersion() == 2 && f.get(1).inflightPinnedTo(1) == 2);
        assertEquals("{\"granted\":true}", send("POST", "/stitch/commit_permission",
                "{\"replica\":\"" + b + "\",\"from\":1,\"to\":2}").body());
        replicas.get(1).serve(2);
        router.awaitFleet(f -> f.get(1).servedVersion() == 2);
        // c is the last replica on version 1 while requests pinned to 1 are in flight: it holds
        assertEquals("{\"granted\":false,\"retry_after_ms\":300}", send("POST", "/stitch/commit_permission",
                "{\"replica\":\"" + c + "\",\"from\":1,\"to\":2}").body());
        assertEquals(400, send("POST", "/stitch/commit_permission", "{\"replica\":1}").statusCode());
        String fleet = send("GET", "/fleet", null).body();
        assertTrue(fleet.contains("\"url\":\"" + c + "\",\"version\":1,\"lag\":1,\"state\":\"serving\",\"load\":0"), fleet);
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        start(1, 1);
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", router.address().getPort())) {
            String twoRequests = "GET /list_workers HTTP/1.1\r\nHost: r\r\n\r\n"
                    + "GET /metrics HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n";
            socket.getOutputStream().write(twoRequests.getBytes(StandardCharsets.US_ASCII));
            String both = new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int workers = both.indexOf("{\"urls\":[");
            int metrics = both.indexOf("stitch_router_routed_total");
            assertTrue(workers > 0 && metrics > workers, both);
        }
    }
}
