/**
 * The stitch protocol model and the bulletin board: manifests, pointers, canonical JSON, the
 * filesystem board, and the XXH3 hashing contract that artifact checksums follow.
 */
module dev.stitch.core {
    requires transitive com.fasterxml.jackson.databind;
    requires org.slf4j;
    requires java.net.http;

    exports dev.stitch.board;
    exports dev.stitch.board.store;
    exports dev.stitch.hash;
    exports dev.stitch.protocol;

    // stitch-native registers its SIMD hasher here, so core hashes at native speed without depending on it.
    uses dev.stitch.hash.Xxh3Provider;
    // Remote boards: stitch-s3 registers the S3 store, so core stays free of the AWS SDK.
    uses dev.stitch.board.store.ObjectStoreProvider;
}
