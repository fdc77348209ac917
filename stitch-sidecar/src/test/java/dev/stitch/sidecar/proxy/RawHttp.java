package dev.stitch.sidecar.proxy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A deliberately plain HTTP/1.1 client for tests: it sends exactly the bytes asked for and exposes
 * the response as received (raw body bytes, chunked trailers, timing of the first bytes).
 */
final class RawHttp implements AutoCloseable {
    final Socket socket;
    final InputStream in;
    final OutputStream out;

    RawHttp(int port) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(15_000);
        socket.setTcpNoDelay(true);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /** A parsed response. */
    record Response(int status, Map<String, String> headers, byte[] body, Map<String, String> trailers) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** Sends a request; {@code headers} are "Name: value" lines; Content-Length is added for a body. */
    void send(String method, String path, byte[] body, String... headers) throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: test\r\n");
        for (String h : headers) {
            sb.append(h).append("\r\n");
        }
        if (body != null) {
            sb.append("Content-Length: ").append(body.length).append("\r\n");
        }
        sb.append("\r\n");
        out.write(sb.toString().getBytes(StandardCharsets.ISO_8859_1));
        if (body != null) {
            out.write(body);
        }
        out.flush();
    }

    static Response exchange(int port, String method, String path, String body, String... headers) throws IOException {
        try (RawHttp c = new RawHttp(port)) {
            c.send(method, path, body == null ? null : body.getBytes(StandardCharsets.UTF_8), headers);
            return c.read();
        }
    }

    static Response exchangeBytes(int port, String method, String path, byte[] body, String... headers) throws IOException {
        try (RawHttp c = new RawHttp(port)) {
            c.send(method, path, body, headers);
            return c.read();
        }
    }

    static Response postJson(int port, String path, String body, String... extraHeaders) throws IOException {
        String[] h = new String[extraHeaders.length + 1];
        h[0] = "Content-Type: application/json";
        System.arraycopy(extraHeaders, 0, h, 1, extraHeaders.length);
        return exchange(port, "POST", path, body, h);
    }

    /** Reads the status line and headers only. */
    Response readHead() throws IOException {
        String status = line();
        if (status == null) {
            throw new IOException("connection closed before a response");
        }
        int code = Integer.parseInt(status.split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        String l;
        while ((l = line()) != null && !l.isEmpty()) {
            int colon = l.indexOf(':');
            headers.merge(l.substring(0, colon).trim().toLowerCase(Locale.ROOT), l.substring(colon + 1).trim(),
                    (a, b) -> a + ", " + b);
        }
        return new Response(code, headers, new byte[0], Map.of());
    }

    Response read() throws IOException {
        Response head = readHead();
        Map<String, String> trailers = new LinkedHashMap<>();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        String te = head.header("transfer-encoding");
        String cl = head.header("content-length");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            while (true) {
                String size = line();
                int n = Integer.parseInt(size.split(";")[0].trim(), 16);
                if (n == 0) {
                    String t;
                    while ((t = line()) != null && !t.isEmpty()) {
                        int colon = t.indexOf(':');
                        trailers.put(t.substring(0, colon).trim().toLowerCase(Locale.ROOT), t.substring(colon + 1).trim());
                    }
                    break;
                }
                body.write(in.readNBytes(n));
                line();
            }
        } else if (cl != null) {
            body.write(in.readNBytes(Integer.parseInt(cl)));
        } else if (head.status() != 204 && head.status() != 304) {
            body.write(in.readAllBytes());
        }
        return new Response(head.status(), head.headers(), body.toByteArray(), trailers);
    }

    /** Reads one chunk of a chunked body (null at the terminating chunk). */
    byte[] readChunk() throws IOException {
        String size = line();
        int n = Integer.parseInt(size.split(";")[0].trim(), 16);
        if (n == 0) {
            return null;
        }
        byte[] data = in.readNBytes(n);
        line();
        return data;
    }

    String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                byte[] bytes = b.toByteArray();
                int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
