package dev.stitch.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An HTTP/1.1 forwarding proxy in front of a server (s3proxy, an HTTP board) that injects faults into
 * the next requests matching a method and a substring of the request target (path and query):
 * {@link #slowDown() 503 SlowDown}, {@link #reset() connection resets} before or
 * {@link #resetAfterForwarding() after} the server did the work, and
 * {@link #truncateBody(long) response bodies cut short}. It counts requests and bytes forwarded.
 *
 * <p>Every request is forwarded with {@code Connection: close}, so each connection carries one
 * exchange and bytes are streamed through in both directions without parsing bodies (keep-alive and
 * chunked bodies pass unchanged). Request heads are passed byte for byte but for the connection
 * headers, so signatures over them (SigV4 signs {@code Host}) still hold.
 */
public final class FaultInjectingProxy implements Closeable {
    private static final int MAX_HEAD = 64 << 10;
    private static final Set<String> CONNECTION_HEADERS = Set.of("connection", "keep-alive", "proxy-connection");

    private final URI target;
    private final ServerSocket listener;
    private final ExecutorService connections = Executors.newVirtualThreadPerTaskExecutor();
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final List<Rule> rules = new ArrayList<>();
    private final AtomicInteger requests = new AtomicInteger();
    private final AtomicInteger faultsInjected = new AtomicInteger();
    private final AtomicLong bytesToServer = new AtomicLong();
    private final AtomicLong bytesToClient = new AtomicLong();

    private FaultInjectingProxy(URI target, ServerSocket listener) {
        this.target = target;
        this.listener = listener;
    }

    /** Starts a proxy on a free port of 127.0.0.1 forwarding to {@code target} (http://host:port). */
    public static FaultInjectingProxy start(URI target) throws IOException {
        ServerSocket s = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        FaultInjectingProxy p = new FaultInjectingProxy(target, s);
        Thread.ofPlatform().daemon().name("fault-proxy-accept-" + s.getLocalPort()).start(p::acceptLoop);
        return p;
    }

    /** Where clients connect: {@code http://127.0.0.1:port}. */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + listener.getLocalPort());
    }

    /**
     * Injects {@code fault} into the next {@code times} requests whose method is {@code method} (any
     * when null) and whose target contains {@code targetContains}. Rules apply in the order given.
     */
    public void inject(Fault fault, int times, String method, String targetContains) {
        synchronized (rules) {
            rules.add(new Rule(fault, method, targetContains, times));
        }
    }

    /** Forgets the faults not yet injected. */
    public void clearFaults() {
        synchronized (rules) {
            rules.clear();
        }
    }

    /** Requests received, faulted or not. */
    public int requests() {
        return requests.get();
    }

    /** Requests answered with a fault. */
    public int faultsInjected() {
        return faultsInjected.get();
    }

    /** Bytes forwarded from clients to the server, request heads included. */
    public long bytesToServer() {
        return bytesToServer.get();
    }

    /** Bytes forwarded from the server to clients, response heads included. */
    public long bytesToClient() {
        return bytesToClient.get();
    }

    @Override
    public void close() throws IOException {
        listener.close();
        for (Socket s : open) {
            closeQuietly(s);
        }
        connections.shutdownNow();
    }

    /** Answers {@code 503 Slow Down} with S3's {@code SlowDown} error body, without forwarding. */
    public static Fault slowDown() {
        return new Fault(Kind.SLOW_DOWN, 0);
    }

    /** Resets the connection (RST) once the request head has arrived; the server never sees the request. */
    public static Fault reset() {
        return new Fault(Kind.RESET, 0);
    }

    /**
     * Forwards the request, waits for the server's answer and resets the connection instead of
     * delivering it: the server did the work, the client never heard.
     */
    public static Fault resetAfterForwarding() {
        return new Fault(Kind.RESET_AFTER_FORWARDING, 0);
    }

    /**
     * Forwards the response head and the first {@code bodyBytes} bytes of its body (as framed on the
     * wire, chunk headers included), then closes the connection.
     */
    public static Fault truncateBody(long bodyBytes) {
        return new Fault(Kind.TRUNCATE_BODY, bodyBytes);
    }

    /** A fault to inject; see the factory methods. */
    public record Fault(Kind kind, long bodyBytes) {
    }

    /** The kinds of fault. */
    public enum Kind { SLOW_DOWN, RESET, RESET_AFTER_FORWARDING, TRUNCATE_BODY }

    private static final class Rule {
        final Fault fault;
        final String method;
        final String targetContains;
        int remaining;

        Rule(Fault fault, String method, String targetContains, int remaining) {
            this.fault = fault;
            this.method = method;
            this.targetContains = targetContains;
            this.remaining = remaining;
        }
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                open.add(client);
                connections.execute(() -> serve(client));
            } catch (IOException e) {
                if (!listener.isClosed()) {
                    System.err.println("fault proxy: accept failed: " + e);
                }
            }
        }
    }

    private void serve(Socket client) {
        try (client) {
            // buffered for the byte-wise head parsing; the same stream then carries the body on
            InputStream fromClient = new BufferedInputStream(client.getInputStream());
            byte[] head = readHead(fromClient);
            if (head == null) {
                return;
            }
            String text = new String(head, StandardCharsets.ISO_8859_1);
            String[] requestLine = text.substring(0, text.indexOf("\r\n")).split(" ");
            requests.incrementAndGet();
            Fault fault = takeFault(requestLine[0], requestLine.length > 1 ? requestLine[1] : "");
            if (fault != null) {
                faultsInjected.incrementAndGet();
            }
            if (fault != null && fault.kind() == Kind.RESET) {
                resetConnection(client);
                return;
            }
            if (fault != null && fault.kind() == Kind.SLOW_DOWN) {
                answerSlowDown(client, text, fromClient);
                return;
            }
            forward(client, fromClient, rewriteHead(text), fault);
        } catch (IOException e) {
            // a client or server going away mid-exchange is what the tests provoke; nothing to report
        } finally {
            open.remove(client);
        }
    }

    private Fault takeFault(String method, String requestTarget) {
        synchronized (rules) {
            for (Rule r : rules) {
                if (r.remaining > 0 && (r.method == null || r.method.equalsIgnoreCase(method))
                        && requestTarget.contains(r.targetContains)) {
                    r.remaining--;
                    return r.fault;
                }
            }
            return null;
        }
    }

    private void forward(Socket client, InputStream fromClient, byte[] head, Fault fault) throws IOException {
        try (Socket server = new Socket()) {
            open.add(server);
            try {
                server.connect(new InetSocketAddress(target.getHost(), target.getPort()), 10_000);
                OutputStream toServer = server.getOutputStream();
                toServer.write(head);
                toServer.flush();
                bytesToServer.addAndGet(head.length);
                // the request body, however framed, streams on until the exchange ends
                connections.execute(() -> pump(fromClient, toServer, bytesToServer, server));
                InputStream fromServer = new BufferedInputStream(server.getInputStream());
                OutputStream toClient = client.getOutputStream();
                if (fault == null) {
                    pump(fromServer, toClient, bytesToClient, null);
                    return;
                }
                byte[] responseHead = readResponseHead(fromServer, toClient);
                if (fault.kind() == Kind.RESET_AFTER_FORWARDING) {
                    resetConnection(client);
                    return;
                }
                toClient.write(responseHead);
                bytesToClient.addAndGet(responseHead.length);
                copy(fromServer, toClient, fault.bodyBytes());
                toClient.flush();
            } finally {
                open.remove(server);
            }
        }
    }

    /** Reads the final response head (forwarding interim 1xx heads), or throws when the server closed first. */
    private byte[] readResponseHead(InputStream fromServer, OutputStream toClient) throws IOException {
        while (true) {
            byte[] h = readHead(fromServer);
            if (h == null) {
                throw new EOFException("the server closed the connection before answering");
            }
            if (!new String(h, 0, Math.min(h.length, 12), StandardCharsets.ISO_8859_1).matches("HTTP/1\\.[01] 1\\d\\d")) {
                return h;
            }
            toClient.write(h);
            bytesToClient.addAndGet(h.length);
        }
    }

    private void answerSlowDown(Socket client, String head, InputStream fromClient) throws IOException {
        // read the request body first: a client still sending would see a broken pipe, not the 503
        if (!header(head, "expect").equalsIgnoreCase("100-continue")) {
            String chunked = header(head, "transfer-encoding");
            if (chunked.toLowerCase(Locale.ROOT).contains("chunked")) {
                skipChunkedBody(fromClient);
            } else if (!header(head, "content-length").isEmpty()) {
                fromClient.skipNBytes(Long.parseLong(header(head, "content-length").trim()));
            }
        }
        byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
                + "<Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>")
                .getBytes(StandardCharsets.UTF_8);
        String response = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " + body.length
                + "\r\nConnection: close\r\n\r\n";
        OutputStream out = client.getOutputStream();
        out.write(response.getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
        client.shutdownOutput();
    }

    private static void skipChunkedBody(InputStream in) throws IOException {
        while (true) {
            String sizeLine = readLine(in);
            int semicolon = sizeLine.indexOf(';');
            long size = Long.parseLong((semicolon < 0 ? sizeLine : sizeLine.substring(0, semicolon)).trim(), 16);
            if (size == 0) {
                while (!readLine(in).isEmpty()) {
                    // trailer fields
                }
                return;
            }
            in.skipNBytes(size);
            readLine(in);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new EOFException("the request body ended inside a chunk header");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    /** The head with the client's connection headers replaced by {@code Connection: close}. */
    private static byte[] rewriteHead(String head) {
        StringBuilder out = new StringBuilder(head.length() + 32);
        String[] lines = head.split("\r\n");
        out.append(lines[0]).append("\r\n");
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            String name = colon < 0 ? "" : lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
            if (!lines[i].isEmpty() && !CONNECTION_HEADERS.contains(name)) {
                out.append(lines[i]).append("\r\n");
            }
        }
        out.append("Connection: close\r\n\r\n");
        return out.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private static String header(String head, String name) {
        for (String line : head.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
                return line.substring(colon + 1).trim();
            }
        }
        return "";
    }

    /** Bytes up to and including the blank line ending a head, or null when the stream ended before any. */
    private static byte[] readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream(1024);
        int last4 = 0; // the last four bytes read, to spot CR LF CR LF
        while (last4 != 0x0D0A0D0A) {
            int c = in.read();
            if (c < 0) {
                if (head.size() == 0) {
                    return null;
                }
                throw new EOFException("the connection closed inside a message head");
            }
            head.write(c);
            last4 = (last4 << 8) | c;
            if (head.size() > MAX_HEAD) {
                throw new IOException("message head over " + MAX_HEAD + " bytes");
            }
        }
        return head.toByteArray();
    }

    private void pump(InputStream in, OutputStream out, AtomicLong counter, Socket closeWhenDone) {
        byte[] buf = new byte[64 << 10];
        try {
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                out.write(buf, 0, n);
                out.flush();
                counter.addAndGet(n);
            }
        } catch (IOException e) {
            // the other side closed: the exchange is over
        } finally {
            if (closeWhenDone != null) {
                try {
                    closeWhenDone.shutdownOutput();
                } catch (IOException e) {
                    // already closed
                }
            }
        }
    }

    private void copy(InputStream in, OutputStream out, long limit) throws IOException {
        byte[] buf = new byte[64 << 10];
        long left = limit;
        while (left > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
                return;
            }
            out.write(buf, 0, n);
            bytesToClient.addAndGet(n);
            left -= n;
        }
    }

    /** Closes with SO_LINGER 0, which sends RST: the peer sees "connection reset", not an orderly end. */
    private static void resetConnection(Socket s) {
        try {
            s.setSoLinger(true, 0);
            s.close();
        } catch (SocketException e) {
            closeQuietly(s);
        } catch (IOException e) {
            // already gone
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }
}
