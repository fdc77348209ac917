package dev.stitch.refengine;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.testing.Fixtures;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reference engine against clients that stop reading, abort, or vanish mid-stream, and against
 * requests for endless generations (docs/protocol/sync-and-engines.md §7.4).
 */
class ReferenceEngineHostileClientTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A generation far longer than any test waits for. */
    private static final int LONG = 1_000_000;
    /** Well above one high water mark plus one event, far below what an unbounded engine queues. */
    private static final long QUEUE_BOUND = 1 << 20;

    @TempDir
    Path tmp;
    private ReferenceEngine engine;
    private final List<Socket> sockets = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    @AfterEach
    void stop() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        if (engine != null) {
            engine.close();
        }
    }

    private void start(int maxGenerationTokens) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("base"));
        Files.copy(Fixtures.root().resolve("sparse-v1/base.safetensors"), dir.resolve("model.safetensors"));
        engine = new ReferenceEngine(ReferenceEngine.Config.local(dir).withMaxGenerationTokens(maxGenerationTokens)).start();
    }

    /** Sends one request on a socket with a small receive window, and does not read the answer. */
    private Socket unreadRequest(String path, String body) throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        s.setReceiveBufferSize(4096);
        s.connect(new InetSocketAddress("127.0.0.1", engine.port()), 5000);
        s.setSoTimeout(20_000);
        byte[] b = body.getBytes(UTF_8);
        OutputStream out = s.getOutputStream();
        out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
                + b.length + "\r\n\r\n").getBytes(US_ASCII));
        out.write(b);
        out.flush();
        return s;
    }

    /** Waits until some tokens were generated and the count then stood still for 300 ms. */
    private void awaitStall() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long last = -1;
        long stillSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            long now = engine.tokensGenerated();
            if (now != last) {
                last = now;
                stillSince = System.nanoTime();
            } else if (now > 0 && System.nanoTime() - stillSince > TimeUnit.MILLISECONDS.toNanos(300)) {
                return;
            }
            Thread.sleep(10);
        }
        fail("generation never stalled: tokens " + engine.tokensGenerated() + ", queued bytes " + engine.queuedResponseBytes());
    }

    /** Waits up to two seconds for no generation to be running. */
    private void awaitIdle() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (engine.activeRequests() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, engine.activeRequests(), "the generation must stop within two seconds");
    }

    /** Reads a chunked SSE response to its terminating chunk and returns the {@code data:} payloads. */
    private static List<String> readEvents(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        byte[] end = "data: [DONE]\n\n\r\n0\r\n\r\n".getBytes(US_ASCII);
        while (!endsWith(all, end)) {
            int n = in.read(buf);
            if (n < 0) {
                throw new IOException("stream closed before its end: " + tail(all));
            }
            all.write(buf, 0, n);
        }
        return all.toString(UTF_8).lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
    }

    private static boolean endsWith(ByteArrayOutputStream out, byte[] suffix) {
        if (out.size() < suffix.length) {
            return false;
        }
        byte[] b = out.toByteArray();
        for (int i = 0; i < suffix.length; i++) {
            if (b[b.length - suffix.length + i] != suffix[i]) {
                return false;
            }
        }
        return true;
    }

    private static String tail(ByteArrayOutputStream out) {
        String s = out.toString(UTF_8);
        return s.substring(Math.max(0, s.length() - 300));
    }

    private HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(5))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> postAsync(String path, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(engine.url() + path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aReaderThatStallsPausesItsStreamWithABoundedQueueWhileTheEngineStaysResponsive() throws Exception {
        start(LONG);
        unreadRequest("/v1/completions", "{\"prompt\":\"hog\",\"max_tokens\":" + LONG + ",\"stream\":true}");
        awaitStall();
        long queued = engine.queuedResponseBytes();
        assertTrue(queued > 0 && queued <= QUEUE_BOUND, "queued response bytes " + queued + " not in (0, " + QUEUE_BOUND + "]");
        assertEquals(1, engine.activeRequests(), "the stream is held, not finished");
        assertTrue(engine.tokensGenerated() < LONG, "generated " + engine.tokensGenerated() + " tokens for a reader that reads nothing");

        HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(engine.url() + "/health"))
                .timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode());
        JsonNode small = JSON.readTree(post("/generate", "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":3}}").body());
        assertEquals(3, small.path("meta_info").path("completion_tokens").asInt());
        long held = engine.tokensGenerated();
        Thread.sleep(300);
        assertEquals(held, engine.tokensGenerated(), "a held stream generates nothing");
        assertTrue(engine.queuedResponseBytes() <= QUEUE_BOUND);
    }

    @Test
    void abortByRidEndsAHeldGenerateStreamWithAnAbortEventAndDone() throws Exception {
        start(LONG);
        Socket s = unreadRequest("/generate",
                "{\"text\":\"hog\",\"rid\":\"hog\",\"stream\":true,\"sampling_params\":{\"max_new_tokens\":" + LONG + "}}");
        awaitStall();
        assertEquals(1, engine.activeRequests());
        assertEquals(200, post("/abort_request", "{\"rid\":\"hog\"}").statusCode());
        awaitIdle();

        List<String> events = readEvents(s);
        assertEquals("[DONE]", events.getLast());
        JsonNode last = JSON.readTree(events.get(events.size() - 2));
        assertEquals("hog", last.path("meta_info").path("id").asText());
        assertEquals("abort", last.path("meta_info").path("finish_reason").path("type").asText(), last.path("meta_info").toString());
        assertTrue(last.path("output_ids").size() < LONG);
    }

    @Test
    void abortAllEndsAHeldChatStreamWithFinishReasonAbort() throws Exception {
        start(LONG);
        Socket s = unreadRequest("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hog\"}],\"max_tokens\":"
                + LONG + ",\"stream\":true}");
        awaitStall();
        assertEquals(200, post("/abort_request", "{\"abort_all\":true}").statusCode());
        awaitIdle();

        List<String> events = readEvents(s);
        assertEquals("[DONE]", events.getLast());
        JsonNode last = JSON.readTree(events.get(events.size() - 2));
        assertEquals("chat.completion.chunk", last.path("object").asText());
        assertEquals("abort", last.path("choices").get(0).path("finish_reason").asText(), last.toString());
    }

    @Test
    void abortByRidStopsALongNonStreamingGeneration() throws Exception {
        int huge = 20_000_000;
        start(huge);
        // An abort for no running request is a no-op; it also opens the connection the real abort reuses.
        assertEquals(200, post("/abort_request", "{\"rid\":\"nobody\"}").statusCode());
        CompletableFuture<HttpResponse<String>> gen = postAsync("/generate",
                "{\"text\":\"hog\",\"rid\":\"long\",\"sampling_params\":{\"max_new_tokens\":" + huge + "}}");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (engine.activeRequests() == 0 && !gen.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertEquals(200, post("/abort_request", "{\"rid\":\"long\"}").statusCode());
        awaitIdle();
        JsonNode meta = JSON.readTree(gen.get(30, TimeUnit.SECONDS).body()).path("meta_info");
        assertEquals("abort", meta.path("finish_reason").path("type").asText(), meta.toString());
        assertTrue(meta.path("completion_tokens").asInt() < huge);
    }

    @Test
    void aClientThatDisconnectsMidStreamStopsItsGeneration() throws Exception {
        start(LONG);
        Socket s = unreadRequest("/v1/completions", "{\"prompt\":\"gone\",\"max_tokens\":" + LONG + ",\"stream\":true}");
        awaitStall();
        s.setSoLinger(true, 0);
        s.close();
        awaitIdle();
        long stopped = engine.tokensGenerated();
        assertTrue(stopped < LONG, "generated " + stopped + " tokens for a client that left");
        Thread.sleep(200);
        assertEquals(stopped, engine.tokensGenerated());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (engine.queuedResponseBytes() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, engine.queuedResponseBytes(), "the departed client's queued bytes are released");
    }

    @Test
    void generationLengthIsClampedToTheConfiguredCap() throws Exception {
        start(100);
        JsonNode g = JSON.readTree(post("/generate", "{\"text\":\"hi\",\"sampling_params\":{\"max_new_tokens\":2000000000}}").body());
        assertEquals(100, g.path("output_ids").size());
        assertEquals("length", g.path("meta_info").path("finish_reason").path("type").asText());
        assertEquals(100, g.path("meta_info").path("finish_reason").path("length").asInt());
        JsonNode c = JSON.readTree(post("/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":2000000000}").body());
        assertEquals(100, c.path("usage").path("completion_tokens").asInt());
        assertEquals(100, JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(engine.url() + "/server_info")).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body()).path("max_generation_tokens").asInt());
        assertEquals(ReferenceEngine.DEFAULT_MAX_GENERATION_TOKENS,
                ReferenceEngine.Config.local(tmp).maxGenerationTokens());
    }
}
