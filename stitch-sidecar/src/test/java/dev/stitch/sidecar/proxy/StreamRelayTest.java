package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.stitch.sync.AdmissionGate;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * SSE streams relayed through the proxy (docs/protocol/sidecar-http.md §4.6): whatever the engine's chunk
 * boundaries (inside a field name, between CR and LF, inside a multi-byte character, empty chunks),
 * the client gets the engine's bytes unchanged, then the end comment once on versioned routes.
 */
class StreamRelayTest {
    private StubEngine engine;
    private AdmissionGate gate;
    private ProxyServer proxy;

    @BeforeEach
    void start() throws Exception {
        engine = new StubEngine();
        gate = new AdmissionGate(null, 3);
        gate.latestSeen(3);
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        engine.close();
    }

    private int startProxy(boolean endComment) {
        ProxyServer.Config config = ProxyServer.Config.defaults(URI.create("http://127.0.0.1:" + engine.port()))
                .withListen("127.0.0.1", 0).withIoThreads(1).withStreamEndComment(endComment);
        proxy = new ProxyServer(config, gate, new RecordingEndpoints()).start();
        return proxy.port();
    }

    /** A stream of SSE events with CRLF and LF line ends, multi-line data and non-ASCII text. */
    private static byte[] eventStream(int events, long seed) {
        Random rnd = new Random(seed);
        String[] words = {"hé", "日本語", "🙂", "data:", "\\n", "\"q\"", "x", ":", "   "};
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < events; i++) {
            String eol = i % 3 == 0 ? "\r\n" : "\n";
            if (i % 5 == 0) {
                sb.append(": keep-alive").append(eol);
            }
            sb.append("event: token").append(eol).append("id: ").append(i).append(eol);
            sb.append("data: {\"text\":\"");
            for (int w = rnd.nextInt(6); w >= 0; w--) {
                sb.append(words[rnd.nextInt(words.length)]);
            }
            sb.append("\",\"n\":").append(i).append('}').append(eol);
            if (i % 4 == 0) {
                sb.append("data: second line").append(eol);
            }
            sb.append(eol);
        }
        sb.append("data: [DONE]\n\n");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Cut points that land on awkward bytes: CR before LF, UTF-8 continuation bytes, ':' of a field, plus empties. */
    private static List<byte[]> awkwardChunks(byte[] stream) {
        List<Integer> cuts = new ArrayList<>();
        for (int i = 1; i < stream.length; i++) {
            boolean crlf = stream[i - 1] == '\r' && stream[i] == '\n';
            boolean midChar = (stream[i] & 0xC0) == 0x80;
            boolean field = stream[i] == ':' || stream[i - 1] == 'd' && stream[i] == 'a';
            if (crlf || midChar || field && i % 2 == 0) {
                cuts.add(i);
            }
        }
        List<byte[]> chunks = new ArrayList<>();
        int from = 0;
        for (int cut : cuts) {
            chunks.add(Arrays.copyOfRange(stream, from, cut));
            if (cut % 7 == 0) {
                chunks.add(new byte[0]);
            }
            from = cut;
        }
        chunks.add(Arrays.copyOfRange(stream, from, stream.length));
        return chunks;
    }

    private void engineStreams(List<byte[]> chunks) {
        engine.script = (ctx, req) -> {
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
            head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            ctx.write(head);
            for (byte[] c : chunks) {
                if (c.length > 0) {
                    ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(c)));
                }
            }
            ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        };
    }

    private static byte[] concat(byte[] a, byte[] b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(a);
        out.writeBytes(b);
        return out.toByteArray();
    }

    @Test
    void versionedStreamIsRelayedByteForByteThenClosedByTheEndComment() throws Exception {
        int port = startProxy(true);
        for (long seed = 1; seed <= 3; seed++) {
            byte[] stream = eventStream(200, seed);
            List<byte[]> chunks = awkwardChunks(stream);
            engineStreams(chunks);
            RawHttp.Response r = RawHttp.postJson(port, "/generate", "{\"text\":\"hi\",\"stream\":true}");
            assertEquals(200, r.status());
            assertEquals("3", r.header("x-stitch-weight-version-start"));
            assertNull(r.header("x-stitch-weight-version-end"), "a stream's end goes in the comment");
            assertArrayEquals(concat(stream, ResponseStamper.streamEndComment(3)), r.body(),
                    "seed " + seed + ", " + chunks.size() + " chunks");
        }
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void withoutTheCommentOrOnUnversionedRoutesTheStreamIsUntouched() throws Exception {
        int port = startProxy(false);
        byte[] stream = eventStream(120, 7);
        engineStreams(awkwardChunks(stream));
        RawHttp.Response versioned = RawHttp.postJson(port, "/v1/completions", "{\"prompt\":\"hi\",\"stream\":true}");
        assertEquals("3", versioned.header("x-stitch-weight-version-start"));
        assertArrayEquals(stream, versioned.body());
        RawHttp.Response other = RawHttp.postJson(port, "/v1/other", "{\"stream\":true}");
        assertNull(other.header("x-stitch-weight-version-start"));
        assertArrayEquals(stream, other.body());
    }
}
