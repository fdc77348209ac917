package dev.stitch.board.store;

import java.io.IOException;
import java.net.URI;

/**
 * Opens stores for one URI scheme. Found with {@link java.util.ServiceLoader}, so that the S3 client
 * (module stitch-s3, with the AWS SDK) stays out of users' way unless they put it on the path.
 */
public interface ObjectStoreProvider {

    /** Whether this provider opens {@code scheme} ({@code s3}, {@code http}, ...). */
    boolean opens(String scheme);

    /** Opens the store at {@code location}. */
    ObjectStore open(URI location, StoreOptions options) throws IOException;
}
