package dev.stitch.s3;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.board.store.StoredDocument;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumMode;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * A board on S3-compatible object storage (docs/protocol/board.md §7): {@code s3://bucket/prefix}.
 *
 * <p>Creates are {@code If-None-Match: *} writes, a single PutObject below
 * {@link StoreOptions#partBytes()} and a parallel multipart upload from there on (completed with
 * {@code If-None-Match: *}, so the key appears whole or not at all); replaces are {@code If-Match}
 * PutObjects. Requests are retried by the SDK (5xx, throttling, connection errors) with the board's
 * attempts and jittered backoff, each retry reported to the listener; a ranged read whose body ends
 * early or is reset resumes after the last byte delivered. A conditional write retried after a try
 * whose answer was lost can be refused by its own success: that is reported as the
 * {@link PreconditionFailedException} it is, and the caller tells the cases apart by metadata.
 */
public final class S3ObjectStore implements ObjectStore {
    private static final Logger log = LoggerFactory.getLogger(S3ObjectStore.class);
    private static final int CHUNK = 256 << 10;

    private final S3Location location;
    private final StoreOptions options;
    private final DefaultCredentialsProvider credentials;
    private final S3Client s3;

    private S3ObjectStore(S3Location location, StoreOptions options, DefaultCredentialsProvider credentials, S3Client s3) {
        this.location = location;
        this.options = options;
        this.credentials = credentials;
        this.s3 = s3;
    }

    /** Opens the board at {@code s3://bucket/prefix}, configured the AWS way (see {@link S3Clients}). */
    public static S3ObjectStore open(URI location, StoreOptions options) throws IOException {
        S3Location where = S3Location.parse(location);
        DefaultCredentialsProvider credentials = DefaultCredentialsProvider.builder().build();
        try {
            return new S3ObjectStore(where, options, credentials, S3Clients.build(options, credentials));
        } catch (IOException | RuntimeException e) {
            credentials.close();
            throw e;
        }
    }

    @Override
    public URI location() {
        return location.uri();
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public StoredDocument read(String key, String ifNoneMatch, long maxBytes) throws IOException {
        for (int attempt = 1; ; attempt++) {
            ResponseInputStream<GetObjectResponse> in = call("GET", key, null, () -> {
                try {
                    // ChecksumMode.ENABLED: where the object has a full-object checksum the SDK verifies the body
                    return s3.getObject(b -> b.bucket(location.bucket()).key(location.objectKey(key))
                            .ifNoneMatch(ifNoneMatch).checksumMode(ChecksumMode.ENABLED));
                } catch (S3Exception e) {
                    if (e.statusCode() == 304) {
                        return null;
                    }
                    throw e;
                }
            });
            if (in == null) {
                return StoredDocument.unchanged(ifNoneMatch);
            }
            try (in) {
                long declared = in.response().contentLength() == null ? -1 : in.response().contentLength();
                if (declared > maxBytes) {
                    in.abort();
                    throw new IOException(location.describe(key) + " is " + declared + " bytes, more than the " + maxBytes
                            + " a board document may have");
                }
                byte[] bytes;
                try {
                    bytes = in.readNBytes((int) Math.min(maxBytes + 1, Integer.MAX_VALUE - 8));
                    if (declared >= 0 && bytes.length < declared) {
                        throw new IOException("the body ended after " + bytes.length + " of " + declared + " bytes");
                    }
                } catch (IOException | SdkException e) {
                    in.abort();
                    if (!transientBodyFailure(e) || attempt >= options.attempts()) {
                        throw new IOException("GET " + location.describe(key) + " failed after " + attempt + " tries: "
                                + e.getMessage(), e);
                    }
                    pause("GET", key, attempt, e);
                    continue;
                }
                if (bytes.length > maxBytes) {
                    throw new IOException(location.describe(key) + " is more than the " + maxBytes + " bytes a board document may have");
                }
                options.listener().received(bytes.length);
                return new StoredDocument(bytes, in.response().eTag());
            }
        }
    }

    @Override
    public Optional<ObjectInfo> stat(String key) throws IOException {
        HeadObjectResponse head = call("HEAD", key, null, () -> {
            try {
                return s3.headObject(b -> b.bucket(location.bucket()).key(location.objectKey(key)));
            } catch (S3Exception e) {
                if (e.statusCode() == 404) {
                    return null;
                }
                throw e;
            }
        });
        if (head == null) {
            return Optional.empty();
        }
        return Optional.of(new ObjectInfo(key, head.contentLength(), head.eTag(), head.lastModified(), head.metadata()));
    }

    @Override
    public void readRange(String key, long offset, long length, String etag, RangeSink sink) throws IOException {
        byte[] buf = new byte[CHUNK];
        ByteBuffer view = ByteBuffer.wrap(buf);
        long done = 0;
        int failures = 0;
        while (done < length) {
            long from = offset + done;
            long to = offset + length - 1;
            // failed requests (5xx, throttling, refused connections) are the SDK's to retry; this loop resumes bodies
            ResponseInputStream<GetObjectResponse> in = call("GET range", key, "changed while it was being read (entity tag "
                    + etag + " no longer matches)", () -> s3.getObject(b -> b.bucket(location.bucket())
                    .key(location.objectKey(key)).range("bytes=" + from + "-" + to).ifMatch(etag)));
            long before = done;
            Exception broken = null;
            try (in) {
                try {
                    Long declared = in.response().contentLength();
                    if (in.response().contentRange() == null && from != 0) {
                        throw new IOException(location.describe(key) + " ignored the Range header (answered the whole object for bytes "
                                + from + "-" + to + ")");
                    }
                    if (declared != null && declared != to - from + 1) {
                        throw new IOException(location.describe(key) + " answered " + declared + " bytes for the range " + from + "-"
                                + to + " (the object is shorter than the range)");
                    }
                    while (done < length) {
                        int n;
                        try {
                            n = in.read(buf, 0, (int) Math.min(buf.length, length - done));
                        } catch (IOException | SdkException e) {
                            broken = e;
                            break;
                        }
                        if (n < 0) {
                            break;
                        }
                        view.clear().limit(n);
                        sink.accept(view); // a failing sink is the caller's error, never retried
                        done += n;
                        options.listener().received(n);
                    }
                } finally {
                    if (done < length) {
                        // closing would read the rest of the range to keep the connection; abort drops it instead
                        in.abort();
                    }
                }
            }
            if (done < length) {
                IOException e = new IOException("GET range " + location.describe(key) + " ended after " + (done - before)
                        + " bytes of the range " + from + "-" + to
                        + (broken == null ? "" : ": " + broken.getClass().getSimpleName() + ": " + broken.getMessage()), broken);
                if (broken != null && !transientBodyFailure(broken)) {
                    throw e;
                }
                // progress resets the budget: a long file over a flaky link may need many resumes
                failures = done > before ? 1 : failures + 1;
                if (failures >= options.attempts()) {
                    throw new IOException(e.getMessage() + " (" + failures + " tries in a row without progress)", broken);
                }
                pause("GET range", key, failures, e);
            }
        }
    }

    @Override
    public ObjectInfo create(String key, Path file, Map<String, String> metadata) throws IOException {
        long size = Files.size(file);
        if (size >= options.partBytes()) {
            return new MultipartUpload(this, key, file, size, metadata).run();
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return put(key, UploadBodies.of(channel, 0, size, contentType(key), options.listener()), size, metadata);
        }
    }

    @Override
    public ObjectInfo create(String key, byte[] bytes, Map<String, String> metadata) throws IOException {
        return put(key, UploadBodies.of(bytes, contentType(key), options.listener()), bytes.length, metadata);
    }

    private ObjectInfo put(String key, RequestBody body, long size, Map<String, String> metadata) throws IOException {
        PutObjectResponse r = call("PUT", key, "already exists (If-None-Match: * refused)", () -> s3.putObject(
                b -> b.bucket(location.bucket()).key(location.objectKey(key)).ifNoneMatch("*")
                        .contentType(contentType(key)).contentLength(size).metadata(metadata), body));
        return new ObjectInfo(key, size, r.eTag(), null, lowerCaseNames(metadata));
    }

    @Override
    public ObjectInfo replace(String key, byte[] bytes, String etag) throws IOException {
        try {
            PutObjectResponse r = call("PUT", key, "changed since it was read (If-Match: " + etag + " refused)", () -> s3.putObject(
                    b -> b.bucket(location.bucket()).key(location.objectKey(key)).ifMatch(etag)
                            .contentType(contentType(key)).contentLength((long) bytes.length),
                    UploadBodies.of(bytes, contentType(key), options.listener())));
            return new ObjectInfo(key, bytes.length, r.eTag(), null, Map.of());
        } catch (NoSuchFileException e) {
            // S3 answers If-Match on a missing key with 404; for a compare-and-swap both mean "not what you read"
            PreconditionFailedException x = new PreconditionFailedException(key, location.describe(key)
                    + " does not exist any more (If-Match: " + etag + " answered 404)");
            x.initCause(e);
            throw x;
        }
    }

    @Override
    public List<ObjectInfo> list(String prefix) throws IOException {
        return call("LIST", prefix, null, () -> {
            List<ObjectInfo> out = new ArrayList<>();
            s3.listObjectsV2Paginator(b -> b.bucket(location.bucket()).prefix(location.objectPrefix(prefix))).contents()
                    .forEach(o -> out.add(new ObjectInfo(location.boardKey(o.key()), o.size(), o.eTag(), o.lastModified(), Map.of())));
            return out;
        });
    }

    @Override
    public void delete(String key) throws IOException {
        call("DELETE", key, null, () -> s3.deleteObject(b -> b.bucket(location.bucket()).key(location.objectKey(key))));
    }

    @Override
    public List<PendingUpload> pendingUploads(String prefix) throws IOException {
        return call("LIST uploads", prefix, null, () -> {
            List<PendingUpload> out = new ArrayList<>();
            s3.listMultipartUploadsPaginator(b -> b.bucket(location.bucket()).prefix(location.objectPrefix(prefix))).uploads()
                    .forEach(u -> out.add(new PendingUpload(location.boardKey(u.key()), u.uploadId(), u.initiated())));
            return out;
        });
    }

    @Override
    public void abort(PendingUpload upload) throws IOException {
        try {
            call("abort multipart upload " + upload.uploadId() + " of", upload.key(), null, () -> s3.abortMultipartUpload(
                    b -> b.bucket(location.bucket()).key(location.objectKey(upload.key())).uploadId(upload.uploadId())));
        } catch (NoSuchFileException e) {
            // NoSuchUpload: completed or aborted already; either way nothing of it is left to release
            log.debug("upload {} of {} was already gone: {}", upload.uploadId(), location.describe(upload.key()), e.getMessage());
        }
    }

    @Override
    public void close() {
        s3.close();
        credentials.close();
    }

    @Override
    public String toString() {
        return "S3ObjectStore[" + location.uri() + "]";
    }

    S3Client client() {
        return s3;
    }

    S3Location where() {
        return location;
    }

    StoreOptions options() {
        return options;
    }

    /**
     * Runs one SDK call with its operation and key bound for the retry strategy's reports, and turns
     * its failure into the store's exceptions.
     *
     * @param refusal what a failed precondition means here, or null when the request has none
     */
    <T> T call(String operation, String key, String refusal, SdkCall<T> body) throws IOException {
        ReportingRetryStrategy.Call call = new ReportingRetryStrategy.Call(operation, key);
        try {
            return ScopedValue.where(ReportingRetryStrategy.CALL, call).call(body::run);
        } catch (SdkException e) {
            throw S3Failures.translate(operation, key, location.describe(key), refusal, e, call.tries());
        }
    }

    /** A call into the SDK, whose failures are unchecked {@link SdkException}s. */
    @FunctionalInterface
    interface SdkCall<T> {
        T run();
    }

    private void pause(String operation, String key, int attempt, Exception cause) throws IOException {
        long delay = options.backoffMillis(attempt);
        options.listener().retry(operation, key, attempt, delay, cause);
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while retrying " + operation + " " + location.describe(key));
        }
    }

    /** A body that broke off (reset, early end, timeout) is worth resuming; an interrupt is not. */
    private static boolean transientBodyFailure(Exception e) {
        if (Thread.currentThread().isInterrupted()) {
            return false;
        }
        return !(e instanceof InterruptedIOException) || e instanceof SocketTimeoutException;
    }

    /** Board documents are JSON; everything else is opaque bytes to the store. */
    static String contentType(String key) {
        return key.endsWith(".json") ? "application/json" : "application/octet-stream";
    }

    /** S3 returns user-metadata names in lower case; what a write returns says the same. */
    static Map<String, String> lowerCaseNames(Map<String, String> metadata) {
        Map<String, String> out = new TreeMap<>();
        metadata.forEach((k, v) -> out.put(k.toLowerCase(Locale.ROOT), v));
        return out;
    }
}
