/**
 * The {@code s3://} object store of remote boards (docs/protocol/board.md §7) on the AWS SDK for Java
 * v2. stitch-core finds it through {@link java.util.ServiceLoader}, so only users of S3 boards carry
 * the SDK.
 */
// "s3" ends in a digit, which javac frowns on for module names; the AWS SDK jars have only automatic module names
@SuppressWarnings({"module", "requires-automatic"})
module dev.stitch.s3 {
    // the store's API is core's ObjectStore SPI
    requires transitive dev.stitch.core;
    requires org.slf4j;
    requires software.amazon.awssdk.auth;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.http.apache5;
    requires software.amazon.awssdk.regions;
    requires software.amazon.awssdk.retries;
    requires software.amazon.awssdk.retries.api;
    requires software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.utils;

    exports dev.stitch.s3;

    provides dev.stitch.board.store.ObjectStoreProvider with dev.stitch.s3.S3StoreProvider;
}
