package dev.stitch.s3;

import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore.PendingUpload;
import dev.stitch.board.store.StoreOptions;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.UploadPartResponse;

/**
 * One create of a large file as a multipart upload (docs/protocol/board.md §7): parts of
 * {@link StoreOptions#partBytes()} uploaded {@link StoreOptions#concurrency()} at a time, each
 * streamed from the file by positional reads (memory stays bounded by the SDK's chunk buffers, not
 * the part size), then completed with {@code If-None-Match: *} so the key appears whole, and only if
 * no other writer created it first. Any failure aborts the upload, best effort: what an abort leaves
 * behind (the server unreachable) is listed by {@code pendingUploads} and released by gc.
 */
final class MultipartUpload {
    private static final Logger log = LoggerFactory.getLogger(MultipartUpload.class);
    /** S3's largest part number. */
    private static final int MAX_PARTS = 10_000;

    private final S3ObjectStore store;
    private final S3Client s3;
    private final S3Location location;
    private final StoreOptions options;
    private final String key;
    private final Path file;
    private final long size;
    private final Map<String, String> metadata;

    MultipartUpload(S3ObjectStore store, String key, Path file, long size, Map<String, String> metadata) {
        this.store = store;
        this.s3 = store.client();
        this.location = store.where();
        this.options = store.options();
        this.key = key;
        this.file = file;
        this.size = size;
        this.metadata = metadata;
    }

    ObjectInfo run() throws IOException {
        long partBytes = options.partBytes();
        long partCount = (size + partBytes - 1) / partBytes;
        if (partCount > MAX_PARTS) {
            throw new IOException(file + " (" + size + " bytes) needs " + partCount + " parts of " + partBytes
                    + " bytes to upload to " + location.describe(key) + ", more than S3's " + MAX_PARTS + "; raise the part size");
        }
        String objectKey = location.objectKey(key);
        String contentType = S3ObjectStore.contentType(key);
        String uploadId = store.call("create multipart upload of", key, null, () -> s3.createMultipartUpload(
                b -> b.bucket(location.bucket()).key(objectKey).contentType(contentType).metadata(metadata)
                        .checksumAlgorithm(ChecksumAlgorithm.CRC32))).uploadId();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            CompletedPart[] parts = uploadParts(channel, uploadId, (int) partCount);
            CompleteMultipartUploadResponse r = store.call("complete multipart upload " + uploadId + " of", key,
                    "already exists (If-None-Match: * refused when the upload completed)", () -> s3.completeMultipartUpload(
                            b -> b.bucket(location.bucket()).key(objectKey).uploadId(uploadId).ifNoneMatch("*")
                                    .multipartUpload(m -> m.parts(parts))));
            return new ObjectInfo(key, size, r.eTag(), null, S3ObjectStore.lowerCaseNames(metadata));
        } catch (IOException | RuntimeException | Error e) {
            abort(uploadId, e);
            throw e;
        }
    }

    /**
     * Uploads every part with {@code concurrency} workers taking part numbers in order; the first
     * failure stops the workers from starting more parts and is thrown once all have stopped.
     */
    private CompletedPart[] uploadParts(FileChannel channel, String uploadId, int partCount) throws IOException {
        CompletedPart[] parts = new CompletedPart[partCount];
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        int workers = Math.min(options.concurrency(), partCount);
        ExecutorService pool = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("s3-upload-" + key + "-", 0).factory());
        try {
            for (int w = 0; w < workers; w++) {
                pool.execute(() -> {
                    try {
                        for (int i = next.getAndIncrement(); i < partCount && failure.get() == null; i = next.getAndIncrement()) {
                            parts[i] = uploadPart(channel, uploadId, i);
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                });
            }
        } finally {
            // waits for every worker; an interrupt here stops them (shutdownNow) and is re-asserted
            pool.close();
        }
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted uploading " + file + " to " + location.describe(key));
        }
        Throwable t = failure.get();
        if (t instanceof IOException e) {
            throw e;
        }
        if (t instanceof RuntimeException e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        if (t != null) {
            throw new IOException("uploading " + file + " to " + location.describe(key) + " failed", t);
        }
        return parts;
    }

    private CompletedPart uploadPart(FileChannel channel, String uploadId, int index) throws IOException {
        long offset = (long) index * options.partBytes();
        long length = Math.min(options.partBytes(), size - offset);
        int number = index + 1;
        UploadPartResponse r = store.call("upload part " + number + " of", key, null, () -> s3.uploadPart(
                b -> b.bucket(location.bucket()).key(location.objectKey(key)).uploadId(uploadId).partNumber(number)
                        .contentLength(length).checksumAlgorithm(ChecksumAlgorithm.CRC32),
                UploadBodies.of(channel, offset, length, "application/octet-stream", options.listener())));
        // the part's CRC32 goes into the completion where the server returned one (S3 does; s3proxy's filesystem does not)
        return CompletedPart.builder().partNumber(number).eTag(r.eTag()).checksumCRC32(r.checksumCRC32()).build();
    }

    /** Releases the upload's parts after a failure; a failed abort is added to the failure, not thrown over it. */
    private void abort(String uploadId, Throwable failure) {
        boolean interrupted = Thread.interrupted(); // the abort's own request must not be refused for the caller's interrupt
        try {
            store.abort(new PendingUpload(key, uploadId, null));
            log.debug("aborted multipart upload {} of {} after {}", uploadId, location.describe(key), failure.toString());
        } catch (IOException | RuntimeException e) {
            log.warn("could not abort a failed upload; gc releases it: {}", e.getMessage());
            failure.addSuppressed(e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
