package dev.stitch.board.store;

/**
 * A small object read whole, or the news that it has not changed since an earlier read.
 *
 * @param bytes the object's bytes, or null when {@link #notModified()}
 * @param etag  its entity tag (null when the server sent none)
 */
public record StoredDocument(byte[] bytes, String etag) {

    /** The answer to a conditional read whose entity tag still matched. */
    public static StoredDocument unchanged(String etag) {
        return new StoredDocument(null, etag);
    }

    public boolean notModified() {
        return bytes == null;
    }
}
