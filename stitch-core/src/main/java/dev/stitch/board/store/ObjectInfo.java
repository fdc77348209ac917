package dev.stitch.board.store;

import java.time.Instant;
import java.util.Map;

/**
 * What a store knows of one object.
 *
 * @param key          the board-relative key
 * @param size         bytes
 * @param etag         the entity tag, quotes included as the server sent it, or null when it sent none
 * @param lastModified when the object was written (by the server's clock), or null when unknown
 * @param metadata     user metadata (lower-case names, without the store's prefix); empty when not read
 */
public record ObjectInfo(String key, long size, String etag, Instant lastModified, Map<String, String> metadata) {
    public ObjectInfo {
        metadata = metadata == null ? Map.of() : Map.copyOf(metadata);
    }
}
