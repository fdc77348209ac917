package dev.stitch.board.store;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;

/**
 * A read-only board served over HTTP(S) by any static server or cache (docs/protocol/board.md §7.4):
 * whole-object GETs with {@code If-None-Match} for the pointer, ranged GETs bound by {@code If-Match}
 * for artifacts, {@code HEAD} for sizes. Transient failures (connection errors, 5xx, 429, bodies that
 * end early) are retried with jittered backoff; a ranged read resumes after the last byte delivered.
 */
final class HttpObjectStore implements ObjectStore {
    private static final int CHUNK = 256 << 10;

    private final URI location;
    private final String base;
    private final StoreOptions options;
    private final HttpClient client;

    HttpObjectStore(URI location, StoreOptions options) {
        this.location = location;
        String s = location.toString();
        this.base = s.endsWith("/") ? s : s + "/";
        this.options = options;
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(options.timeout())
                .followRedirects(HttpClient.Redirect.NORMAL)
                .executor(Executors.newVirtualThreadPerTaskExecutor())
                .build();
    }

    @Override
    public URI location() {
        return location;
    }

    @Override
    public boolean writable() {
        return false;
    }

    @Override
    public StoredDocument read(String key, String ifNoneMatch, long maxBytes) throws IOException {
        for (int attempt = 1; ; attempt++) {
            HttpRequest.Builder b = request(key).GET();
            if (ifNoneMatch != null) {
                b.header("If-None-Match", ifNoneMatch);
            }
            try {
                HttpResponse<InputStream> r = client.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
                try (InputStream in = r.body()) {
                    int status = r.statusCode();
                    if (status == 304) {
                        return StoredDocument.unchanged(r.headers().firstValue("ETag").orElse(ifNoneMatch));
                    }
                    if (status == 200) {
                        long declared = r.headers().firstValueAsLong("Content-Length").orElse(-1);
                        if (declared > maxBytes) {
                            throw new RefusedRequestException(url(key) + " is " + declared + " bytes, more than the " + maxBytes + " a board document may have");
                        }
                        byte[] bytes = in.readNBytes((int) Math.min(maxBytes + 1, Integer.MAX_VALUE - 8));
                        if (bytes.length > maxBytes) {
                            throw new RefusedRequestException(url(key) + " is more than the " + maxBytes + " bytes a board document may have");
                        }
                        if (declared >= 0 && bytes.length != declared) {
                            throw new TruncatedBodyException(url(key) + " ended after " + bytes.length + " of " + declared + " bytes");
                        }
                        options.listener().received(bytes.length);
                        return new StoredDocument(bytes, r.headers().firstValue("ETag").orElse(null));
                    }
                    failOn(status, key, in);
                }
            } catch (IOException e) {
                if (!transientFailure(e) || attempt >= options.attempts()) {
                    throw e;
                }
                pause("GET", key, attempt, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted reading " + url(key));
            }
        }
    }

    @Override
    public Optional<ObjectInfo> stat(String key) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                HttpResponse<Void> r = client.send(request(key).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.discarding());
                int status = r.statusCode();
                if (status == 404 || status == 410) {
                    return Optional.empty();
                }
                if (status == 200) {
                    HttpHeaders h = r.headers();
                    long size = h.firstValueAsLong("Content-Length").orElseThrow(
                            () -> new RefusedRequestException(url(key) + " answered HEAD without a Content-Length"));
                    return Optional.of(new ObjectInfo(key, size, h.firstValue("ETag").orElse(null),
                            lastModified(h), Map.of()));
                }
                failOn(status, key, null);
            } catch (IOException e) {
                if (!transientFailure(e) || attempt >= options.attempts()) {
                    throw e;
                }
                pause("HEAD", key, attempt, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted reading " + url(key));
            }
        }
    }

    @Override
    public void readRange(String key, long offset, long length, String etag, RangeSink sink) throws IOException {
        long done = 0;
        byte[] buf = new byte[CHUNK];
        ByteBuffer view = ByteBuffer.wrap(buf);
        int failures = 0;
        while (done < length) {
            long from = offset + done;
            long to = offset + length - 1;
            HttpRequest.Builder b = request(key).GET().header("Range", "bytes=" + from + "-" + to);
            if (etag != null) {
                b.header("If-Match", etag);
            }
            long before = done;
            try {
                HttpResponse<InputStream> r = client.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
                try (InputStream in = r.body()) {
                    int status = r.statusCode();
                    if (status == 412) {
                        throw new PreconditionFailedException(key, url(key) + " changed while it was being read (entity tag " + etag + " no longer matches)");
                    }
                    if (status == 200 && from != 0) {
                        throw new RefusedRequestException(url(key) + " ignored the Range header (answered 200 for bytes " + from + "-" + to + ")");
                    }
                    if (status != 206 && status != 200) {
                        failOn(status, key, in);
                    }
                    while (done < length) {
                        int n = in.read(buf, 0, (int) Math.min(buf.length, length - done));
                        if (n < 0) {
                            break;
                        }
                        view.clear().limit(n);
                        sink.accept(view);
                        done += n;
                        options.listener().received(n);
                    }
                    if (done < length) {
                        throw new TruncatedBodyException(url(key) + " ended after " + (from - offset + done - before)
                                + " bytes of the range " + from + "-" + to);
                    }
                }
            } catch (IOException e) {
                if (e instanceof PreconditionFailedException || !transientFailure(e)) {
                    throw e;
                }
                // progress resets the budget: a long file over a flaky link may need many resumes
                failures = done > before ? 1 : failures + 1;
                if (failures >= options.attempts()) {
                    throw e;
                }
                pause("GET range", key, failures, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted reading " + url(key));
            }
        }
    }

    @Override
    public ObjectInfo create(String key, Path file, Map<String, String> metadata) throws IOException {
        throw readOnly();
    }

    @Override
    public ObjectInfo create(String key, byte[] bytes, Map<String, String> metadata) throws IOException {
        throw readOnly();
    }

    @Override
    public ObjectInfo replace(String key, byte[] bytes, String etag) throws IOException {
        throw readOnly();
    }

    @Override
    public List<ObjectInfo> list(String prefix) throws IOException {
        throw new IOException("an HTTP board cannot be listed (" + location + "); run gc and repair on the board behind it");
    }

    @Override
    public void delete(String key) throws IOException {
        throw readOnly();
    }

    @Override
    public List<PendingUpload> pendingUploads(String prefix) {
        return List.of();
    }

    @Override
    public void abort(PendingUpload upload) throws IOException {
        throw readOnly();
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public String toString() {
        return "HttpObjectStore[" + location + "]";
    }

    private IOException readOnly() {
        return new IOException("an HTTP board is read-only (" + location + "): publish to the s3:// or file: board it serves");
    }

    private HttpRequest.Builder request(String key) {
        return HttpRequest.newBuilder(URI.create(url(key))).timeout(options.timeout());
    }

    private String url(String key) {
        return base + key;
    }

    private void failOn(int status, String key, InputStream body) throws IOException {
        if (body != null) {
            body.readNBytes(4096);
        }
        if (status == 404 || status == 410) {
            throw new NoSuchFileException(url(key));
        }
        if (status >= 500 || status == 429 || status == 408) {
            throw new ServerBusyException(url(key) + " answered " + status);
        }
        throw new RefusedRequestException(url(key) + " answered HTTP " + status);
    }

    private void pause(String what, String key, int attempt, IOException cause) throws IOException {
        long delay = options.backoffMillis(attempt);
        options.listener().retry(what, key, attempt, delay, cause);
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while retrying " + url(key));
        }
    }

    /**
     * Connection failures, resets, timeouts, server errors and early ends are worth another try; a
     * missing object, a failed precondition, a refused request or an interrupt are not.
     */
    static boolean transientFailure(IOException e) {
        return !(e instanceof NoSuchFileException || e instanceof PreconditionFailedException
                || e instanceof RefusedRequestException || e instanceof java.io.InterruptedIOException);
    }

    private static Instant lastModified(HttpHeaders h) {
        Optional<String> v = h.firstValue("Last-Modified");
        if (v.isEmpty()) {
            return null;
        }
        try {
            return ZonedDateTime.parse(v.get(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    /** A 5xx, 429 or 408: the server may answer the next try. */
    static final class ServerBusyException extends IOException {
        ServerBusyException(String message) {
            super(message);
        }
    }

    /** An answer another try would not change (4xx, a document over its limit, a server that ignores ranges). */
    static final class RefusedRequestException extends IOException {
        RefusedRequestException(String message) {
            super(message);
        }
    }

    /** A body that ended before its declared length. */
    static final class TruncatedBodyException extends IOException {
        TruncatedBodyException(String message) {
            super(message);
        }
    }
}
