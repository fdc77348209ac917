package dev.stitch.s3;

import java.net.URI;
import java.util.Locale;

/**
 * Where a board lives in S3: {@code s3://bucket/prefix}, the prefix optional. A board-relative key
 * {@code k} is stored as {@code prefix/k}, or as {@code k} when there is no prefix.
 *
 * @param uri    the location as given
 * @param bucket the bucket name
 * @param prefix the key prefix without leading or trailing slashes, empty for the bucket's root
 */
record S3Location(URI uri, String bucket, String prefix) {

    static S3Location parse(URI uri) {
        if (uri.getScheme() == null || !uri.getScheme().toLowerCase(Locale.ROOT).equals("s3")) {
            throw new IllegalArgumentException("not an s3:// location: " + uri);
        }
        // the authority, not the host: bucket names need not be valid host names (dots, underscores in old buckets)
        String bucket = uri.getRawAuthority();
        if (bucket == null || bucket.isEmpty()) {
            throw new IllegalArgumentException("s3 location without a bucket: " + uri + " (expected s3://bucket/prefix)");
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new IllegalArgumentException("s3 location with a query or fragment: " + uri + " (expected s3://bucket/prefix)");
        }
        String path = uri.getPath() == null ? "" : uri.getPath();
        int from = 0;
        int to = path.length();
        while (from < to && path.charAt(from) == '/') {
            from++;
        }
        while (to > from && path.charAt(to - 1) == '/') {
            to--;
        }
        return new S3Location(uri, bucket, path.substring(from, to));
    }

    /** The object key of board-relative {@code key}. */
    String objectKey(String key) {
        if (key.isEmpty() || key.startsWith("/")) {
            throw new IllegalArgumentException("board keys are relative and not empty, got '" + key + "' for " + uri);
        }
        return prefix.isEmpty() ? key : prefix + "/" + key;
    }

    /** The object-key prefix of a board-relative key prefix, which may be empty (the whole board). */
    String objectPrefix(String keyPrefix) {
        return prefix.isEmpty() ? keyPrefix : prefix + "/" + keyPrefix;
    }

    /** The board-relative key of an object key under this location. */
    String boardKey(String objectKey) {
        return prefix.isEmpty() ? objectKey : objectKey.substring(prefix.length() + 1);
    }

    /** {@code s3://bucket/prefix/key}, for messages; {@code key} may be a key prefix, or empty for the board. */
    String describe(String key) {
        return "s3://" + bucket + "/" + (prefix.isEmpty() ? key : prefix + "/" + key);
    }
}
