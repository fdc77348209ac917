package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.sync.AdmissionGate;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Conformance cases 21–34, 38–39 (routing) and 67 of docs/conformance.md §9, over loopback. */
class ProxyServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String GEN_OK = "{\"text\":\"ok\",\"meta_info\":{\"finish_reason\":{\"type\":\"length\"}}}";

    private StubEngine engine;
    private AdmissionGate gate;
    private RecordingEndpoints endpoints;
    private ProxyServer proxy;
    private int port;

    @BeforeEach
    void start() throws Exception {
        engine = new StubEngine();
        gate = new AdmissionGate(null, 3);
        gate.latestSeen(3);
        endpoints = new RecordingEndpoints();
        proxy = newProxy(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port())));
        port = proxy.port();
    }

    private ProxyServer newProxy(ProxyServer.Config config) {
        return new ProxyServer(config.withListen("127.0.0.1", 0).withIoThreads(1), gate, endpoints).start();
    }

    @AfterEach
    void stop() {
        proxy.close();
        engine.close();
    }

    private RawHttp.Response generate(String body) throws Exception {
        return RawHttp.postJson(port, "/generate", body);
    }

    private JsonNode forwarded() throws Exception {
        List<StubEngine.Seen> s = engine.seen;
        return JSON.readTree(s.getLast().body());
    }

    private static JsonNode json(RawHttp.Response r) throws Exception {
        return JSON.readTree(r.body());
    }

    // ---- 21: constraint outcomes ----

    @Test
    void constraintOutcomes() throws Exception {
        assertEquals(200, generate("{\"text\":\"hi\"}").status());
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":3}}").status());
        RawHttp.Response notReady = generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":5}}");
        assertEquals(409, notReady.status());
        assertEquals("WeightVersionNotReady", json(notReady).path("type").asText());
        assertEquals(List.of(5L), endpoints.hints);
        RawHttp.Response tooOld = generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":1}}");
        assertEquals(409, tooOld.status());
        assertEquals("WeightVersionTooOld", json(tooOld).path("error").path("type").asText());
        assertEquals(409, generate("{\"text\":\"hi\",\"weight_version\":{\"min_required_version\":4}}").status());
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":{\"min_required_version\":3}}").status());
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":{\"min_version\":3}}").status());
        assertEquals(409, generate("{\"text\":\"hi\",\"weight_version\":{\"min_version\":9}}").status());
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":3,\"min_required_version\":99}}").status());
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":null}").status());
        assertEquals(3, proxy.stats().rejections("WeightVersionNotReady"));
        assertEquals(1, proxy.stats().rejections("WeightVersionTooOld"));
    }

    // ---- 22: invalid constraints ----

    @Test
    void invalidConstraintsAre400() throws Exception {
        for (String wv : List.of("{\"exact_version\":\"abc\"}", "{\"exact_version\":-1}", "{\"exact_version\":1.5}",
                "{\"exact_version\":1e3}", "{\"exact_version\":true}", "{\"foo\":1}", "7", "\"3\"",
                "{\"min_required_version\":2,\"min_version\":3}")) {
            RawHttp.Response r = generate("{\"text\":\"hi\",\"weight_version\":" + wv + "}");
            assertEquals(400, r.status(), wv);
            assertEquals("InvalidWeightVersion", json(r).path("error").path("type").asText(), wv);
            assertFalse(json(r).path("error").path("message").asText().isEmpty());
        }
        assertTrue(engine.seen.isEmpty(), "nothing forwarded");
        assertEquals(200, generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":\" 3 \"}}").status());
        assertEquals(409, generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":\"5\"}}").status());
    }

    // ---- 23: 409 body ----

    @Test
    void conflictBodiesCarryBothGenerationsOfKeys() throws Exception {
        gate.latestSeen(4);
        RawHttp.Response r = generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":5}}");
        assertEquals("1", r.header("retry-after"));
        assertEquals("{\"error\":{\"type\":\"WeightVersionNotReady\",\"message\":\"server is at version 3, target 5 is not ready\","
                + "\"current_version\":3,\"target_version\":5,\"latest_version\":4,\"retryable\":true},"
                + "\"type\":\"WeightVersionNotReady\",\"target_version\":5,\"applied\":3,"
                + "\"message\":\"server is at version 3, target 5 is not ready\"}", r.text());
        JsonNode old = json(generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":2}}"));
        assertEquals(3, old.path("error").path("current_version").asInt());
        assertEquals(2, old.path("target_version").asInt());
        assertEquals(3, old.path("applied").asInt());
        assertFalse(old.path("error").path("retryable").asBoolean());
    }

    // ---- 24: stripping and content types ----

    @Test
    void weightVersionStrippedEverywhereAndJsonMediaTypeIsCaseInsensitive() throws Exception {
        RawHttp.exchange(port, "POST", "/generate", "{\"text\":\"hi\",\"weight_version\":{\"exact_version\":3}}",
                "Content-Type: Application/JSON; charset=UTF-8");
        assertFalse(forwarded().has("weight_version"));
        assertEquals("wv3;", forwarded().path("extra_key").asText());
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"ok\":1}"));
        RawHttp.Response r = RawHttp.postJson(port, "/tokenize?x=1", "{\"weight_version\":{\"exact_version\":\"junk\"},\"a\":1}");
        assertEquals(200, r.status());
        assertEquals("{\"a\":1}", engine.seen.getLast().text());
        assertEquals("/tokenize?x=1", engine.seen.getLast().uri());
        for (String path : List.of("/generate", "/tokenize")) {
            RawHttp.Response bad = RawHttp.postJson(port, path, "{\"text\":");
            assertEquals(400, bad.status(), path);
            assertEquals("InvalidRequest", json(bad).path("error").path("type").asText());
        }
        int before = engine.seen.size();
        RawHttp.Response plain = RawHttp.exchange(port, "POST", "/tokenize", "{not json", "Content-Type: text/plain");
        assertEquals(200, plain.status(), "non-JSON bodies of unversioned routes are forwarded raw");
        assertEquals("{not json", engine.seen.get(before).text());
        // A versioned route's body is read as JSON whatever its Content-Type says, as the engine reads it.
        RawHttp.Response versionedPlain = RawHttp.exchange(port, "POST", "/generate", "{not json", "Content-Type: text/plain");
        assertEquals(400, versionedPlain.status());
        assertEquals(before + 1, engine.seen.size(), "nothing of it forwarded");
    }

    // ---- 25: rid ----

    @Test
    void ridInjectedWhenAbsentOrNullAndKeptOtherwise() throws Exception {
        generate("{\"text\":\"hi\"}");
        assertTrue(forwarded().path("rid").asText().matches("[0-9a-f]{32}"));
        generate("{\"text\":\"hi\",\"rid\":null}");
        assertTrue(forwarded().path("rid").asText().matches("[0-9a-f]{32}"));
        generate("{\"text\":\"hi\",\"rid\":\"mine\"}");
        assertEquals("mine", forwarded().path("rid").asText());
        generate("{\"text\":[\"a\",\"b\"],\"rid\":[\"r1\",\"r2\"]}");
        assertEquals("[\"r1\",\"r2\"]", forwarded().path("rid").toString());
    }

    // ---- 26: extra_key ----

    @Test
    void extraKeyComposition() throws Exception {
        generate("{\"text\":\"hi\"}");
        assertEquals("{\"text\":\"hi\",\"rid\":\"" + forwarded().path("rid").asText() + "\",\"extra_key\":\"wv3;\"}",
                engine.seen.getLast().text(), "rid then extra_key appended at the end");
        generate("{\"text\":\"hi\",\"extra_key\":\"user-key\",\"rid\":\"r\"}");
        assertEquals("{\"text\":\"hi\",\"extra_key\":\"wv3;user-key\",\"rid\":\"r\"}", engine.seen.getLast().text(),
                "a replaced extra_key stays in place");
        generate("{\"text\":[\"a\",\"b\"],\"extra_key\":[\"k1\",\"k2\"],\"rid\":[\"x\",\"y\"]}");
        assertEquals("[\"wv3;k1\",\"wv3;k2\"]", forwarded().path("extra_key").toString());
        generate("{\"text\":[\"a\",\"b\"],\"extra_key\":[null,\"k2\"],\"rid\":[\"x\",\"y\"]}");
        assertEquals("[\"wv3;\",\"wv3;k2\"]", forwarded().path("extra_key").toString());
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"id\":\"c\"}"));
        RawHttp.postJson(port, "/v1/chat/completions", "{\"messages\":[]}");
        assertEquals("wv3;", forwarded().path("extra_key").asText());
        RawHttp.Response bad = generate("{\"text\":\"hi\",\"extra_key\":7}");
        assertEquals(400, bad.status());
        assertEquals("InvalidRequest", json(bad).path("error").path("type").asText());
        assertEquals(400, generate("{\"text\":\"hi\",\"extra_key\":[\"a\",1]}").status());

        gate.close(AdmissionGate.State.CLOSED_ALL);
        gate.flip("run-a", 1);
        gate.reopen();
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, GEN_OK));
        RawHttp.Response r = generate("{\"text\":\"hi\",\"extra_key\":\"k\"}");
        assertEquals("wv1;run-a/k", forwarded().path("extra_key").asText());
        assertEquals("run-a", r.header("x-stitch-run-id"));
        generate("{\"text\":\"hi\"}");
        assertEquals("wv1;run-a/", forwarded().path("extra_key").asText());
    }

    // ---- 27: unversioned routes ----

    @Test
    void unversionedRoutesAreNotGatedStampedOrRewritten() throws Exception {
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"tokens\":[1,2]}"));
        gate.close(AdmissionGate.State.CLOSED_ALL);
        try {
            RawHttp.Response r = RawHttp.postJson(port, "/tokenize", "{\"text\":\"hi\"}");
            assertEquals(200, r.status());
            assertEquals("{\"tokens\":[1,2]}", r.text());
            assertNull(r.header("x-stitch-weight-version-start"));
            assertEquals("{\"text\":\"hi\"}", engine.seen.getLast().text());
            RawHttp.Response get = RawHttp.exchange(port, "GET", "/v1/models", null);
            assertEquals(200, get.status());
        } finally {
            gate.reopen();
        }
        assertEquals(0, gate.activeRequests());
    }

    // ---- 28: array bodies ----

    @Test
    void arrayBodiesForwardedByteIdenticalAndHeaderStamped() throws Exception {
        String body = "[ {\"text\":\"a\", \"weight_version\":{\"exact_version\":99}}, 1e-05 ]";
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "[{\"text\":\"x\",\"meta_info\":{}}]"));
        RawHttp.Response r = generate(body);
        assertEquals(200, r.status());
        assertEquals(body, engine.seen.getLast().text());
        assertEquals("[{\"text\":\"x\",\"meta_info\":{}}]", r.text(), "array responses are not modified");
        assertEquals("3", r.header("x-stitch-weight-version-start"));
        assertEquals("3", r.header("x-stitch-weight-version-end"));
    }

    // ---- 29, 30: stamping ----

    @Test
    void generateResponsesStampedPreservingLexemes() throws Exception {
        engine.script = (ctx, req) -> {
            var resp = StubEngine.json(201, "{\"text\":\"ok\\u00e9\",\"logprob\":-0.0001,\"x\":1e-05,"
                    + "\"meta_info\":{\"weight_version\":\"3\",\"finish_reason\":{\"type\":\"length\"}}}");
            resp.headers().set("x-engine", "sglang");
            ctx.writeAndFlush(resp);
        };
        RawHttp.Response r = generate("{\"text\":\"hi\",\"weight_version\":{\"exact_version\":3}}");
        assertEquals(201, r.status());
        assertEquals("sglang", r.header("x-engine"));
        assertEquals("{\"text\":\"ok\\u00e9\",\"logprob\":-0.0001,\"x\":1e-05,\"meta_info\":{\"weight_version\":\"3\","
                + "\"finish_reason\":{\"type\":\"length\"},\"weight_version_start\":3,\"weight_version_end\":3}}", r.text());
        assertEquals("3", r.header("x-stitch-weight-version-start"));
        assertEquals("3", r.header("x-stitch-weight-version-end"));
        assertEquals(String.valueOf(r.body().length), r.header("content-length"));

        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"text\":\"ok\"}"));
        assertEquals("{\"text\":\"ok\",\"meta_info\":{\"weight_version\":\"3\",\"weight_version_start\":3,\"weight_version_end\":3}}",
                generate("{\"text\":\"hi\"}").text());
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"text\":\"ok\",\"meta_info\":\"odd\"}"));
        assertEquals("{\"text\":\"ok\",\"meta_info\":\"odd\"}", generate("{\"text\":\"hi\"}").text());

        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.json(200, "{\"id\":\"c\",\"usage\":{\"x\":-0.0001}}"));
        RawHttp.Response oa = RawHttp.postJson(port, "/v1/completions", "{\"prompt\":\"hi\"}");
        assertEquals("{\"id\":\"c\",\"usage\":{\"x\":-0.0001},\"weight_version_start\":3,\"weight_version_end\":3}", oa.text());
    }

    @Test
    void nonJsonVersionedResponsesOfKnownSizeCarryTheEndHeader() throws Exception {
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.response(400, "text/plain", "bad sampling params"));
        RawHttp.Response r = generate("{\"text\":\"hi\"}");
        assertEquals(400, r.status());
        assertEquals("bad sampling params", r.text());
        assertEquals("3", r.header("x-stitch-weight-version-start"));
        assertEquals("3", r.header("x-stitch-weight-version-end"));
    }

    // ---- 31: streaming ----

    @Test
    void streamsRelayChunkByChunkWithEndComment() throws Exception {
        CountDownLatch firstReceived = new CountDownLatch(1);
        engine.script = (ctx, req) -> {
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
            head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            ctx.write(head);
            ctx.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer("data: {\"text\":\"a\"}\n\n", StandardCharsets.UTF_8)));
            // The upstream stream stays open until the client has seen the first event.
            Thread.ofVirtual().start(() -> {
                try {
                    firstReceived.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                ctx.executor().execute(() -> {
                    ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer("data: [DONE]\n\n", StandardCharsets.UTF_8)));
                    ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
                });
            });
        };
        try (RawHttp c = new RawHttp(port)) {
            c.send("POST", "/generate", "{\"text\":\"hi\",\"stream\":true}".getBytes(StandardCharsets.UTF_8),
                    "Content-Type: application/json");
            RawHttp.Response head = c.readHead();
            assertEquals(200, head.status());
            assertEquals("3", head.header("x-stitch-weight-version-start"));
            assertNull(head.header("trailer"));
            StringBuilder seen = new StringBuilder();
            while (!seen.toString().contains("\n\n")) {
                seen.append(new String(c.readChunk(), StandardCharsets.UTF_8));
            }
            assertEquals("data: {\"text\":\"a\"}\n\n", seen.toString(), "first event arrives while upstream is open");
            firstReceived.countDown();
            byte[] chunk;
            while ((chunk = c.readChunk()) != null) {
                seen.append(new String(chunk, StandardCharsets.UTF_8));
            }
            assertTrue(seen.toString().endsWith("data: [DONE]\n\n: x-stitch-weight-version-end=3\n\n"), seen.toString());
            assertEquals("", c.line(), "no trailers without TE: trailers");
        }
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void trailerOnlyWhenClientAcceptsTrailers() throws Exception {
        engine.script = (ctx, req) -> ctx.writeAndFlush(StubEngine.response(200, "text/event-stream", "data: [DONE]\n\n"));
        RawHttp.Response with = RawHttp.postJson(port, "/generate", "{\"text\":\"hi\",\"stream\":true}", "TE: trailers");
        assertEquals(HttpHeaderValues.CHUNKED.toString(), with.header("transfer-encoding"));
        assertEquals("3", with.trailers().get("x-stitch-weight-version-end"));
        assertEquals("data: [DONE]\n\n: x-stitch-weight-version-end=3\n\n", with.text());
        assertNull(engine.seen.getLast().header("te"), "TE is hop-by-hop");
        RawHttp.Response without = RawHttp.postJson(port, "/generate", "{\"text\":\"hi\",\"stream\":true}");
        assertTrue(without.trailers().isEmpty());
    }

    // ---- 32: blocked routes ----

    @Test
    void blockedRoutesAre403ForEveryMethodAndSpelling() throws Exception {
        for (String route : ProxyServer.BLOCKED_ROUTES) {
            for (String path : List.of("/" + route, "/" + route + "/", "//" + route)) {
                for (String method : List.of("GET", "POST", "PUT", "DELETE")) {
                    RawHttp.Response r = RawHttp.exchange(port, method, path, method.equals("GET") ? null : "{}",
                            "Content-Type: application/json");
                    assertEquals(403, r.status(), method + " " + path);
                    assertEquals("{\"error\":{\"type\":\"RouteBlocked\",\"message\":\"/" + route
                            + " is managed by the weight-sync sidecar and is not proxied\"}}", r.text());
                }
            }
        }
        assertTrue(engine.seen.isEmpty());
    }

    // ---- 33: client disconnect ----

    @Test
    void clientDisconnectAbortsUpstreamAndReleasesLease() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        engine.script = (ctx, req) -> {
            if (req.uri().equals("/generate")) {
                arrived.countDown(); // never answers
            } else {
                ctx.writeAndFlush(StubEngine.json(200, ""));
            }
        };
        try (RawHttp c = new RawHttp(port)) {
            c.send("POST", "/generate", "{\"text\":\"hi\",\"rid\":[\"r1\",\"r2\"]}".getBytes(StandardCharsets.UTF_8),
                    "Content-Type: application/json");
            assertTrue(arrived.await(5, TimeUnit.SECONDS));
            assertEquals(1, gate.activeRequests());
        }
        waitFor(() -> engine.seen("abort_request").size() == 2);
        assertEquals(List.of("{\"rid\":\"r1\"}", "{\"rid\":\"r2\"}"),
                engine.seen("abort_request").stream().map(StubEngine.Seen::text).sorted().toList());
        waitFor(() -> gate.activeRequests() == 0);
        waitFor(() -> proxy.stats().requests("generate", 499) == 1);
    }

    @Test
    void clientDisconnectWhileWaitingAtTheGateForwardsNothing() throws Exception {
        gate.close(AdmissionGate.State.CLOSED_ALL);
        try (RawHttp c = new RawHttp(port)) {
            c.send("POST", "/generate", "{\"text\":\"hi\"}".getBytes(StandardCharsets.UTF_8), "Content-Type: application/json");
            waitFor(() -> gate.waitingRequests() == 1);
        }
        waitFor(() -> proxy.stats().requests("generate", 499) == 1);
        gate.reopen();
        assertEquals(0, gate.activeRequests());
        assertTrue(engine.seen.isEmpty());
    }

    // ---- 34: engine failures ----

    @Test
    void engineDownIs503() throws Exception {
        engine.close();
        RawHttp.Response r = generate("{\"text\":\"hi\"}");
        assertEquals(503, r.status());
        assertEquals("1", r.header("retry-after"));
        assertEquals("{\"error\":{\"type\":\"EngineUnavailable\",\"message\":\"the local inference engine is unavailable\",\"retryable\":true}}",
                r.text());
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void connectionCutMidResponseIs502() throws Exception {
        engine.script = (ctx, req) -> {
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            head.headers().set(HttpHeaderNames.CONTENT_LENGTH, 100);
            ctx.write(head);
            ctx.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer("{\"text\":", StandardCharsets.UTF_8)))
                    .addListener(ChannelFutureListener.CLOSE);
        };
        RawHttp.Response r = generate("{\"text\":\"hi\"}");
        assertEquals(502, r.status());
        assertEquals("EngineUnavailable", json(r).path("error").path("type").asText());
        assertEquals("1", r.header("retry-after"));
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void upstreamTimeoutIs504AndAbortsTheRid() throws Exception {
        proxy.close();
        proxy = newProxy(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withTimeouts(Duration.ofSeconds(2), Duration.ofMillis(300)));
        port = proxy.port();
        engine.script = (ctx, req) -> {
            if (!req.uri().equals("/generate")) {
                ctx.writeAndFlush(StubEngine.json(200, ""));
            }
        };
        RawHttp.Response r = generate("{\"text\":\"hi\",\"rid\":\"slow\"}");
        assertEquals(504, r.status());
        assertEquals("EngineTimeout", json(r).path("error").path("type").asText());
        waitFor(() -> engine.seen("abort_request").size() == 1);
        assertEquals("{\"rid\":\"slow\"}", engine.seen("abort_request").getFirst().text());
        assertEquals(0, gate.activeRequests());
    }

    // ---- drain preemption ----

    @Test
    void drainTimeoutPreemptsWith503() throws Exception {
        CountDownLatch arrived = new CountDownLatch(1);
        engine.script = (ctx, req) -> {
            if (req.uri().equals("/generate")) {
                arrived.countDown();
            } else {
                ctx.writeAndFlush(StubEngine.json(200, ""));
            }
        };
        RawHttp.Response[] out = new RawHttp.Response[1];
        Thread client = Thread.ofVirtual().start(() -> {
            try {
                out[0] = generate("{\"text\":\"hi\",\"rid\":\"long\"}");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(arrived.await(5, TimeUnit.SECONDS));
        gate.close(AdmissionGate.State.CLOSED_ALL);
        var outcome = gate.drain(TimeUnit.MILLISECONDS.toNanos(100), TimeUnit.SECONDS.toNanos(5), p -> { });
        gate.reopen();
        client.join(5000);
        assertEquals(1, outcome.preempted().size());
        assertEquals(503, out[0].status());
        assertEquals("RequestPreempted", json(out[0]).path("error").path("type").asText());
        waitFor(() -> engine.seen("abort_request").size() == 1);
        assertEquals(1, proxy.stats().drainPreempted());
    }

    // ---- 67: body limit ----

    @Test
    void oversizedBodyIs413AndNothingForwarded() throws Exception {
        proxy.close();
        proxy = newProxy(ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withMaxRequestBodyBytes(1024));
        port = proxy.port();
        RawHttp.Response r = generate("{\"text\":\"" + "x".repeat(2000) + "\"}");
        assertEquals(413, r.status());
        assertEquals("{\"error\":{\"type\":\"RequestTooLarge\",\"message\":\"request body exceeds 1024 bytes\"}}", r.text());
        assertTrue(engine.seen.isEmpty());
        assertEquals(200, generate("{\"text\":\"small\"}").status());
    }

    // ---- 38, 39: sidecar routes ----

    @Test
    void sidecarRoutesGoToTheControlPlaneEvenWithTheGateClosed() throws Exception {
        gate.close(AdmissionGate.State.CLOSED_ALL);
        try {
            assertEquals("{\"ok\":true}", RawHttp.exchange(port, "GET", "/health", null).text());
            assertEquals("{\"weight_version\":\"3\"}", RawHttp.exchange(port, "GET", "/get_weight_version/", null).text());
            RawHttp.Response m = RawHttp.exchange(port, "GET", "/metrics", null);
            assertEquals("text/plain; version=0.0.4; charset=utf-8", m.header("content-type"));
            assertEquals(200, RawHttp.exchange(port, "POST", "/wake", "ignored").status());
            assertEquals(200, RawHttp.exchange(port, "POST", "/rpc_sync_from_bulletin_board", "").status());
            assertEquals(200, RawHttp.exchange(port, "GET", "/server_info", null).status());
        } finally {
            gate.reopen();
        }
        assertTrue(endpoints.called.contains("rpc_sync_from_bulletin_board:"));
        assertTrue(endpoints.called.containsAll(List.of("health", "get_weight_version", "metrics", "wake", "server_info")));
        assertTrue(engine.seen.isEmpty());
    }

    @Test
    void keepAliveConnectionServesManyRequestsAndHopByHopHeadersAreDropped() throws Exception {
        try (RawHttp c = new RawHttp(port)) {
            for (int i = 0; i < 5; i++) {
                c.send("POST", "/generate?q=" + i, ("{\"text\":\"" + i + "\"}").getBytes(StandardCharsets.UTF_8),
                        "Content-Type: application/json", "Connection: keep-alive, x-private", "x-private: 1",
                        "Keep-Alive: timeout=5", "x-slime-request-id: abc");
                RawHttp.Response r = c.read();
                assertEquals(200, r.status());
            }
        }
        StubEngine.Seen s = engine.seen.getLast();
        assertEquals("/generate?q=4", s.uri());
        assertNull(s.header("x-private"));
        assertNull(s.header("keep-alive"));
        assertEquals("abc", s.header("x-slime-request-id"));
        assertEquals("127.0.0.1:" + engine.port(), s.header("host"));
        assertEquals(5, proxy.stats().requests("generate", 200));
        StringBuilder prom = new StringBuilder();
        proxy.stats().appendPrometheus(prom);
        assertTrue(prom.toString().contains("stitch_requests_total{route=\"generate\",code=\"200\"} 5"), prom.toString());
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        engine.script = (ctx, req) -> {
            String text = req.content().toString(StandardCharsets.UTF_8);
            ctx.writeAndFlush(StubEngine.json(200, "{\"echo\":" + (text.contains("\"first\"") ? 1 : 2) + "}"));
        };
        try (RawHttp c = new RawHttp(port)) {
            byte[] a = "{\"prompt\":\"first\"}".getBytes(StandardCharsets.UTF_8);
            byte[] b = "{\"prompt\":\"second\"}".getBytes(StandardCharsets.UTF_8);
            c.send("POST", "/v1/completions", a, "Content-Type: application/json");
            c.send("POST", "/v1/completions", b, "Content-Type: application/json");
            assertTrue(c.read().text().startsWith("{\"echo\":1,"));
            assertTrue(c.read().text().startsWith("{\"echo\":2,"));
        }
    }

    @Test
    void portAcceptsBeforeAnyCatchUp() throws Exception {
        // start() returned: the listener is bound and answering without any sync having happened.
        assertNotNull(RawHttp.exchange(port, "GET", "/health", null));
    }

    static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached within 10 s");
            }
            Thread.sleep(10);
        }
    }
}
