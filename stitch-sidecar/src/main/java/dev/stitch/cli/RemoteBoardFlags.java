package dev.stitch.cli;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.store.StoreOptions;
import java.net.URI;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The flags of a remote board (docs/protocol/cli-and-config.md §10.4), shared by every command that
 * takes {@code --board} (a picocli mixin). Credentials and region come from the AWS chains
 * ({@code AWS_ACCESS_KEY_ID}/{@code AWS_SECRET_ACCESS_KEY}, profiles, instance roles;
 * {@code AWS_REGION}); the endpoint from {@code --s3-endpoint}, else {@code AWS_ENDPOINT_URL_S3} or
 * {@code AWS_ENDPOINT_URL}.
 */
final class RemoteBoardFlags {
    @Option(names = "--cache-dir", paramLabel = "DIR",
            description = "Remote boards: the local directory versions are fetched into and verified (engines read them "
                    + "from here by path) and publishes are staged in. Default: a directory per board under java.io.tmpdir.")
    Path cacheDir;

    @Option(names = "--cache-max-bytes", paramLabel = "SIZE", converter = ByteSize.class, defaultValue = "64g",
            description = "Remote boards: the most the cache may hold; applied versions are evicted to stay under it "
                    + "(e.g. 200g). Default: ${DEFAULT-VALUE}.")
    long cacheMaxBytes;

    @Option(names = "--s3-endpoint", paramLabel = "URL",
            description = "S3-compatible endpoint (MinIO, Ceph, s3proxy, ...). Default: AWS_ENDPOINT_URL_S3, "
                    + "AWS_ENDPOINT_URL, else AWS itself.")
    URI s3Endpoint;

    @Option(names = "--s3-path-style",
            description = "Address buckets by path (http://host/bucket/key), as most S3-compatible stores need.")
    boolean s3PathStyle;

    @Option(names = "--fetch-concurrency", paramLabel = "N", defaultValue = "8",
            description = "Remote boards: ranged reads in flight per file, and parts in flight per upload. Default: ${DEFAULT-VALUE}.")
    int concurrency;

    @Option(names = "--part-size", paramLabel = "SIZE", converter = ByteSize.class, defaultValue = "16m",
            description = "Remote boards: bytes per ranged read and per multipart upload part (at least 5m). "
                    + "Default: ${DEFAULT-VALUE}.")
    long partBytes;

    @Option(names = "--store-attempts", paramLabel = "N", defaultValue = "8",
            description = "Remote boards: tries per request before a transient failure (5xx, SlowDown, reset, cut-off "
                    + "body) is reported; retries back off exponentially with jitter. Default: ${DEFAULT-VALUE}.")
    int attempts;

    /** The options for {@code address}, or a clear usage error. */
    RemoteBoardOptions options(BoardAddress address) {
        if (partBytes < StoreOptions.MIN_PART_BYTES || partBytes > Integer.MAX_VALUE) {
            throw new CliFailure("--part-size must be between 5m and 2g", 2);
        }
        if (concurrency < 1 || attempts < 1 || cacheMaxBytes <= 0) {
            throw new CliFailure("--fetch-concurrency, --store-attempts and --cache-max-bytes must be positive", 2);
        }
        StoreOptions store = StoreOptions.defaults().withConcurrency(concurrency).withPartBytes((int) partBytes)
                .withAttempts(attempts).withS3Endpoint(s3Endpoint, s3PathStyle);
        RemoteBoardOptions o = RemoteBoardOptions.defaults(address).withStore(store).withCacheMaxBytes(cacheMaxBytes);
        return cacheDir == null ? o : o.withCacheDir(cacheDir);
    }

    /** Parses a {@code --board} value, turning a bad one into a usage error. */
    static BoardAddress address(String text) {
        try {
            return BoardAddress.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage(), 2);
        }
    }

}
