package dev.stitch.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The proxy itself: bodies pass unchanged whatever their framing, and each fault does what it says. */
class FaultInjectingProxyTest {
    private static final byte[] BLOB = new byte[100_000];

    static {
        for (int i = 0; i < BLOB.length; i++) {
            BLOB[i] = (byte) (i * 31 + (i >>> 8));
        }
    }

    private HttpServer server;
    private FaultInjectingProxy proxy;
    private final AtomicInteger served = new AtomicInteger();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        // echoes request bodies with a chunked response (length 0 asks the JDK server for chunked encoding)
        server.createContext("/echo", ex -> {
            served.incrementAndGet();
            byte[] body = ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        // a fixed-length body
        server.createContext("/blob", ex -> {
            served.incrementAndGet();
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(200, BLOB.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(BLOB);
            }
        });
        server.start();
        proxy = FaultInjectingProxy.start(URI.create("http://127.0.0.1:" + server.getAddress().getPort()));
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        server.stop(0);
    }

    /** Sends one raw request through the proxy and returns everything that came back until the connection closed. */
    private byte[] exchange(String head, byte[] body) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.endpoint().getPort())) {
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            InputStream in = s.getInputStream();
            return in.readAllBytes();
        }
    }

    private static String chunked(String... chunks) {
        StringBuilder b = new StringBuilder();
        for (String c : chunks) {
            b.append(Integer.toHexString(c.length())).append("\r\n").append(c).append("\r\n");
        }
        return b.append("0\r\n\r\n").toString();
    }

    private static byte[] bodyOf(byte[] response) {
        String text = new String(response, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        return Arrays.copyOfRange(response, end + 4, response.length);
    }

    @Test
    void keepAliveClientsAndChunkedBodiesPassThrough() throws Exception {
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            for (int i = 0; i < 3; i++) {
                byte[] sent = ("request " + i + " ").repeat(5000).getBytes(StandardCharsets.UTF_8);
                // an InputStream publisher has no length: the request body goes chunked
                HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(proxy.endpoint().resolve("/echo"))
                                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(sent))).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                assertEquals(200, r.statusCode());
                assertArrayEquals(sent, r.body());
            }
        }
        assertEquals(3, proxy.requests());
        assertEquals(3, served.get());
        assertEquals(0, proxy.faultsInjected());
        assertTrue(proxy.bytesToServer() > 3 * 5000 * 10, "request bodies were counted: " + proxy.bytesToServer());
        assertTrue(proxy.bytesToClient() > 3 * 5000 * 10, "response bodies were counted: " + proxy.bytesToClient());
    }

    @Test
    void slowDownReadsAChunkedRequestBodyAndAnswersLikeS3WithoutForwarding() throws IOException {
        proxy.inject(FaultInjectingProxy.slowDown(), 1, "POST", "/echo");
        String body = chunked("hello ", "world");
        byte[] response = exchange("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                body.getBytes(StandardCharsets.ISO_8859_1));
        String text = new String(response, StandardCharsets.UTF_8);
        assertTrue(text.startsWith("HTTP/1.1 503 "), text);
        assertTrue(text.contains("<Code>SlowDown</Code>"), text);
        assertEquals(0, served.get());
        // the rule is spent: the next request goes through
        byte[] next = exchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", "again".getBytes(StandardCharsets.US_ASCII));
        assertTrue(new String(next, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 200"));
        assertTrue(new String(next, StandardCharsets.ISO_8859_1).contains("again"));
        assertEquals(1, proxy.faultsInjected());
        assertEquals(2, proxy.requests());
    }

    @Test
    void resetSendsRstBeforeTheServerSeesTheRequest() {
        proxy.inject(FaultInjectingProxy.reset(), 1, "GET", "/blob");
        SocketException e = assertThrows(SocketException.class, () -> exchange("GET /blob HTTP/1.1\r\nHost: x\r\n\r\n", new byte[0]));
        assertTrue(e.getMessage().toLowerCase(java.util.Locale.ROOT).contains("reset"), e.getMessage());
        assertEquals(0, served.get());
    }

    @Test
    void resetAfterForwardingLetsTheServerDoTheWork() {
        proxy.inject(FaultInjectingProxy.resetAfterForwarding(), 1, "POST", "/echo");
        assertThrows(SocketException.class,
                () -> exchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n", "hi".getBytes(StandardCharsets.US_ASCII)));
        assertEquals(1, served.get());
    }

    @Test
    void truncateBodyDeliversTheHeadAndThatManyBodyBytes() throws IOException {
        proxy.inject(FaultInjectingProxy.truncateBody(1000), 1, "GET", "/blob");
        byte[] response = exchange("GET /blob HTTP/1.1\r\nHost: x\r\n\r\n", new byte[0]);
        assertTrue(new String(response, StandardCharsets.ISO_8859_1).toLowerCase(java.util.Locale.ROOT)
                .contains("content-length: " + BLOB.length), "the head is whole");
        assertArrayEquals(Arrays.copyOf(BLOB, 1000), bodyOf(response));
        byte[] whole = exchange("GET /blob HTTP/1.1\r\nHost: x\r\n\r\n", new byte[0]);
        assertArrayEquals(BLOB, bodyOf(whole));
    }

    @Test
    void faultsMatchTheMethodAndATargetSubstringOnly() throws IOException {
        proxy.inject(FaultInjectingProxy.slowDown(), 5, "PUT", "partNumber=2");
        byte[] other = exchange("PUT /echo?partNumber=1&uploadId=u HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", new byte[]{'a'});
        assertTrue(new String(other, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 200"));
        byte[] get = exchange("GET /echo?partNumber=2 HTTP/1.1\r\nHost: x\r\n\r\n", new byte[0]);
        assertTrue(new String(get, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 200"));
        byte[] hit = exchange("PUT /echo?partNumber=2&uploadId=u HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", new byte[]{'b'});
        assertTrue(new String(hit, StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 503"));
        assertEquals(1, proxy.faultsInjected());
        assertEquals(2, served.get());
    }
}
