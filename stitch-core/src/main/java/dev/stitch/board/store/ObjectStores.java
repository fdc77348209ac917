package dev.stitch.board.store;

import java.io.IOException;
import java.net.URI;
import java.util.Locale;
import java.util.ServiceLoader;

/** Opens the store of a board URI: HTTP(S) here, other schemes (S3) from the providers on the path. */
public final class ObjectStores {
    private ObjectStores() {
    }

    /**
     * Opens {@code location}.
     *
     * @throws IOException naming the scheme and what to add when no provider opens it
     */
    public static ObjectStore open(URI location, StoreOptions options) throws IOException {
        String scheme = location.getScheme() == null ? "" : location.getScheme().toLowerCase(Locale.ROOT);
        if (scheme.equals("http") || scheme.equals("https")) {
            return new HttpObjectStore(location, options);
        }
        for (ObjectStoreProvider p : ServiceLoader.load(ObjectStoreProvider.class, ObjectStores.class.getClassLoader())) {
            if (p.opens(scheme)) {
                return p.open(location, options);
            }
        }
        throw new IOException("no object store for '" + scheme + ":' boards on the class path"
                + (scheme.equals("s3") ? " (add the stitch-s3 module; the stitch.jar sidecar and CLI include it)" : ""));
    }
}
