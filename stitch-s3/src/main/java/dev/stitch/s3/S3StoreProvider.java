package dev.stitch.s3;

import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStoreProvider;
import dev.stitch.board.store.StoreOptions;
import java.io.IOException;
import java.net.URI;

/** Opens {@code s3://bucket/prefix} boards for {@link dev.stitch.board.store.ObjectStores#open}. */
public final class S3StoreProvider implements ObjectStoreProvider {

    @Override
    public boolean opens(String scheme) {
        return scheme.equals("s3");
    }

    @Override
    public ObjectStore open(URI location, StoreOptions options) throws IOException {
        return S3ObjectStore.open(location, options);
    }
}
