package dev.stitch.board;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a board lives (docs/protocol/board.md §7.1): a directory (a path or a {@code file:} URI), an
 * S3 bucket and prefix ({@code s3://bucket/prefix}, read and write), or an HTTP(S) prefix (read only).
 * Exactly one of {@code path} and {@code uri} is set.
 */
public record BoardAddress(Path path, URI uri) {
    private static final Pattern SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]*:.*");

    public BoardAddress {
        if ((path == null) == (uri == null)) {
            throw new IllegalArgumentException("a board address is a path or a URI");
        }
    }

    /** A directory board. */
    public static BoardAddress of(Path path) {
        return new BoardAddress(path, null);
    }

    /**
     * Parses what a user typed: {@code s3://}, {@code http://}, {@code https://} and {@code file:} URIs,
     * anything else is a path.
     *
     * @throws IllegalArgumentException for an unknown scheme or a malformed URI, saying which are known
     */
    public static BoardAddress parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("the board location is empty");
        }
        // A single letter before the colon is a drive, not a scheme; anything else with a colon is a URI.
        if (!SCHEME.matcher(text).matches() || text.indexOf(':') == 1) {
            return of(Path.of(text));
        }
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("malformed board URI '" + text + "': " + e.getReason());
        }
        String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        return switch (scheme) {
            case "file" -> of(Path.of(uri));
            case "s3" -> {
                if (uri.getHost() == null || uri.getHost().isEmpty()) {
                    throw new IllegalArgumentException("an S3 board URI names a bucket: s3://bucket/prefix, got '" + text + "'");
                }
                yield new BoardAddress(null, uri);
            }
            case "http", "https" -> {
                if (uri.getHost() == null) {
                    throw new IllegalArgumentException("an HTTP board URI names a host: " + scheme + "://host/prefix, got '" + text + "'");
                }
                if (uri.getQuery() != null || uri.getFragment() != null) {
                    throw new IllegalArgumentException("an HTTP board URI is a prefix the board's paths are appended to; '"
                            + text + "' has a query or fragment");
                }
                yield new BoardAddress(null, uri);
            }
            default -> throw new IllegalArgumentException("unknown board scheme '" + scheme + ":' in '" + text
                    + "' (a board is a directory, file:, s3://bucket/prefix, or an http(s):// prefix)");
        };
    }

    /** Whether the board is on remote storage (S3 or HTTP). */
    public boolean isRemote() {
        return uri != null;
    }

    /** Whether the board's storage takes writes (a directory or S3). */
    public boolean isWritable() {
        return uri == null || uri.getScheme().equalsIgnoreCase("s3");
    }

    @Override
    public String toString() {
        return path != null ? path.toString() : uri.toString();
    }
}
