package dev.stitch.board;

import dev.stitch.board.store.StoreOptions;
import dev.stitch.hash.Xxh3;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How a remote board is read and written (docs/protocol/board.md §7.5).
 *
 * @param cacheDir      the local directory verified versions are fetched into (and publishes staged in);
 *                      it has the layout of a board, so engines read versions from it by path
 * @param cacheMaxBytes the most the cache may hold; versions already applied are evicted to stay under it
 * @param claimStale    a publish claim not renewed for this long belongs to a dead publisher and may be taken
 * @param store         how the store talks to its server
 */
public record RemoteBoardOptions(Path cacheDir, long cacheMaxBytes, Duration claimStale, StoreOptions store) {

    public RemoteBoardOptions {
        Objects.requireNonNull(cacheDir, "cacheDir");
        Objects.requireNonNull(claimStale, "claimStale");
        Objects.requireNonNull(store, "store");
        if (cacheMaxBytes <= 0) {
            throw new IllegalArgumentException("the cache size limit must be positive, got " + cacheMaxBytes);
        }
    }

    /**
     * A cache under the system's temporary directory named after {@code address} (so two boards never
     * share one), at most 64 GiB, claims stale after 60 s, default store settings.
     */
    public static RemoteBoardOptions defaults(BoardAddress address) {
        String id = Xxh3.hash128(address.toString().getBytes(StandardCharsets.UTF_8)).hex().substring(0, 12);
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "stitch-cache", id);
        return new RemoteBoardOptions(dir, 64L << 30, Duration.ofSeconds(60), StoreOptions.defaults());
    }

    public RemoteBoardOptions withCacheDir(Path dir) {
        return new RemoteBoardOptions(dir, cacheMaxBytes, claimStale, store);
    }

    public RemoteBoardOptions withCacheMaxBytes(long bytes) {
        return new RemoteBoardOptions(cacheDir, bytes, claimStale, store);
    }

    public RemoteBoardOptions withClaimStale(Duration d) {
        return new RemoteBoardOptions(cacheDir, cacheMaxBytes, d, store);
    }

    public RemoteBoardOptions withStore(StoreOptions s) {
        return new RemoteBoardOptions(cacheDir, cacheMaxBytes, claimStale, s);
    }
}
