package dev.stitch.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A static file server over a directory, as an HTTP board's server would be (docs/protocol/board.md
 * §7.4): GET and HEAD, single byte ranges, entity tags with {@code If-None-Match} and {@code If-Match}.
 * Tests can make the next answers fail: a status, or a body cut off after some bytes.
 */
public final class DirectoryHttpServer implements AutoCloseable {
    private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d*)");

    private final Path root;
    private final HttpServer server;
    private final AtomicInteger failuresLeft = new AtomicInteger();
    private volatile int failureStatus;
    private final AtomicInteger truncationsLeft = new AtomicInteger();
    private volatile long truncateAfter;
    private final AtomicInteger requests = new AtomicInteger();
    private final AtomicInteger bodiesUntilCut = new AtomicInteger();
    private final AtomicLong bodyBytes = new AtomicLong();

    private DirectoryHttpServer(Path root) throws IOException {
        this.root = root.toAbsolutePath().normalize();
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        server.createContext("/", this::handle);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.start();
    }

    /** Serves {@code root} on a free loopback port. */
    public static DirectoryHttpServer serve(Path root) throws IOException {
        return new DirectoryHttpServer(root);
    }

    /** The URI of the served directory (ends with a slash). */
    public URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/");
    }

    /** The next {@code n} requests are answered with {@code status}. */
    public void failNext(int n, int status) {
        failureStatus = status;
        failuresLeft.set(n);
    }

    /** The next {@code n} bodies end after {@code bytes} bytes (the connection closes early). */
    public void truncateNext(int n, long bytes) {
        truncateAfter = bytes;
        truncationsLeft.set(n);
    }

    /** The {@code nth} body sent from now on (1 = the next) ends after {@code bytes} bytes. */
    public void truncateBody(int nth, long bytes) {
        truncateAfter = bytes;
        bodiesUntilCut.set(nth);
    }

    public int requests() {
        return requests.get();
    }

    /** Body bytes sent so far. */
    public long bodyBytes() {
        return bodyBytes.get();
    }

    @Override
    public void close() {
        server.stop(0);
    }

    private void handle(HttpExchange ex) throws IOException {
        requests.incrementAndGet();
        try (ex) {
            if (failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                ex.sendResponseHeaders(failureStatus, -1);
                return;
            }
            boolean head = ex.getRequestMethod().equals("HEAD");
            if (!head && !ex.getRequestMethod().equals("GET")) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            Path file = root.resolve(ex.getRequestURI().getPath().substring(1)).normalize();
            if (!file.startsWith(root) || !Files.isRegularFile(file)) {
                ex.sendResponseHeaders(404, -1);
                return;
            }
            long size = Files.size(file);
            long mtime = Files.getLastModifiedTime(file).toMillis();
            long nanos = Files.getLastModifiedTime(file).to(java.util.concurrent.TimeUnit.NANOSECONDS);
            String etag = "\"" + Long.toHexString(size) + "-" + Long.toHexString(nanos) + "\"";
            ex.getResponseHeaders().set("ETag", etag);
            ex.getResponseHeaders().set("Accept-Ranges", "bytes");
            ex.getResponseHeaders().set("Last-Modified", DateTimeFormatter.RFC_1123_DATE_TIME.format(
                    java.time.Instant.ofEpochMilli(mtime).atZone(ZoneOffset.UTC)));
            String inm = ex.getRequestHeaders().getFirst("If-None-Match");
            if (inm != null && inm.equals(etag)) {
                ex.sendResponseHeaders(304, -1);
                return;
            }
            String im = ex.getRequestHeaders().getFirst("If-Match");
            if (im != null && !im.equals("*") && !im.equals(etag)) {
                ex.sendResponseHeaders(412, -1);
                return;
            }
            long from = 0;
            long to = size - 1;
            int status = 200;
            String range = ex.getRequestHeaders().getFirst("Range");
            if (range != null) {
                Matcher m = RANGE.matcher(range);
                if (!m.matches() || Long.parseLong(m.group(1)) >= size) {
                    ex.getResponseHeaders().set("Content-Range", "bytes */" + size);
                    ex.sendResponseHeaders(416, -1);
                    return;
                }
                from = Long.parseLong(m.group(1));
                to = m.group(2).isEmpty() ? size - 1 : Math.min(size - 1, Long.parseLong(m.group(2)));
                status = 206;
                ex.getResponseHeaders().set("Content-Range", "bytes " + from + "-" + to + "/" + size);
            }
            long length = to - from + 1;
            if (head) {
                ex.getResponseHeaders().set("Content-Length", Long.toString(size));
                ex.sendResponseHeaders(200, -1);
                return;
            }
            boolean cut = truncationsLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0
                    || bodiesUntilCut.getAndUpdate(n -> Math.max(0, n - 1)) == 1;
            long limit = cut ? Math.min(truncateAfter, length) : length;
            ex.sendResponseHeaders(status, length);
            try (InputStream in = Files.newInputStream(file); OutputStream out = ex.getResponseBody()) {
                in.skipNBytes(from);
                byte[] buf = new byte[64 << 10];
                long left = limit;
                while (left > 0) {
                    int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                    out.write(buf, 0, n);
                    left -= n;
                    bodyBytes.addAndGet(n);
                }
                if (limit < length) {
                    // Closing the exchange with fewer bytes than declared breaks the connection mid-body.
                    out.flush();
                    throw new IOException("body cut off after " + limit + " bytes by the test");
                }
            }
        }
    }
}
