package dev.stitch.board.store;

import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The objects of one board on remote storage (docs/protocol/board.md §7): S3-compatible object
 * storage, or a read-only HTTP(S) prefix. Keys are board-relative ({@code latest.json},
 * {@code versions/weight_v000001/manifest.json}); the store adds its own prefix. Reads of a missing
 * object throw {@link java.nio.file.NoSuchFileException}; a failed precondition throws
 * {@link PreconditionFailedException}; transient failures are retried inside the store (bounded,
 * reported to {@link StoreOptions#listener()}) before they surface as an {@link IOException}.
 * Implementations are safe for concurrent use.
 */
public interface ObjectStore extends Closeable {

    /** The board's location, as given ({@code s3://bucket/prefix}, {@code https://host/prefix}). */
    URI location();

    /** Whether this store accepts writes (an HTTP board is read-only). */
    boolean writable();

    /**
     * Reads a whole small object (a pointer or manifest) of at most {@code maxBytes}.
     *
     * @param ifNoneMatch an entity tag from an earlier read, or null; when the object still has it the
     *                    result is {@link StoredDocument#notModified()} and carries no bytes
     * @throws java.nio.file.NoSuchFileException when the object does not exist
     * @throws IOException when it is larger than {@code maxBytes}
     */
    StoredDocument read(String key, String ifNoneMatch, long maxBytes) throws IOException;

    /** The object's size, entity tag and metadata, or empty when it does not exist. */
    Optional<ObjectInfo> stat(String key) throws IOException;

    /**
     * Streams bytes {@code [offset, offset + length)} of the object to {@code sink}, in order. The read
     * is bound to {@code etag} (If-Match) so that every range of one file comes from the same object.
     * A body that ends early is an {@link IOException}; the sink has then seen a prefix of the range
     * and the caller resumes from where it stopped.
     */
    void readRange(String key, long offset, long length, String etag, RangeSink sink) throws IOException;

    /**
     * Creates the object only if it does not exist ({@code If-None-Match: *}), from a file (large files
     * as a parallel multipart upload).
     *
     * @throws PreconditionFailedException when the key already exists
     */
    ObjectInfo create(String key, Path file, Map<String, String> metadata) throws IOException;

    /** As {@link #create(String, Path, Map)}, from bytes. */
    ObjectInfo create(String key, byte[] bytes, Map<String, String> metadata) throws IOException;

    /**
     * Replaces the object only while it still has {@code etag} ({@code If-Match}): a compare-and-swap
     * where the store implements one atomically, a check followed by a write where it does not (readers
     * never rely on it: docs/protocol/board.md §7.3).
     *
     * @throws PreconditionFailedException when the object changed or does not exist
     */
    ObjectInfo replace(String key, byte[] bytes, String etag) throws IOException;

    /** Every object whose key starts with {@code prefix}, in key order. */
    List<ObjectInfo> list(String prefix) throws IOException;

    /** Deletes the object; deleting a missing object is not an error. */
    void delete(String key) throws IOException;

    /** Multipart uploads begun under {@code prefix} and neither completed nor aborted. */
    List<PendingUpload> pendingUploads(String prefix) throws IOException;

    /** Aborts an incomplete multipart upload, releasing its parts. */
    void abort(PendingUpload upload) throws IOException;

    /** Receives the bytes of a ranged read. */
    @FunctionalInterface
    interface RangeSink {
        /** Consumes {@code chunk}'s remaining bytes; the buffer is reused after the call returns. */
        void accept(ByteBuffer chunk) throws IOException;
    }

    /** An incomplete multipart upload. */
    record PendingUpload(String key, String uploadId, java.time.Instant initiated) {
    }
}
