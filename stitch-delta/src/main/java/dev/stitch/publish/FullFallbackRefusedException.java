package dev.stitch.publish;

import java.io.IOException;

/**
 * A version had to be published in full, and the publisher's formats have readers that cannot take
 * a full version (upstream sparse_delta consumers, docs/formats/sparse-delta.md §2.8): nothing was published.
 * {@link WeightPublisher.Builder#allowFullFallback(boolean)} publishes such versions anyway.
 */
public final class FullFallbackRefusedException extends IOException {

    private final long version;
    private final String cause;

    FullFallbackRefusedException(long version, String format, String cause) {
        super("version " + version + " must be published in full (" + cause + "), and upstream " + format
                + " consumers cannot load a full version: they would mark it applied without loading anything"
                + " (docs/formats/sparse-delta.md §2.8). Nothing was published; to publish it in full anyway, set"
                + " allowFullFallback(true) on the WeightPublisher builder (stitch publish --allow-full-fallback)");
        this.version = version;
        this.cause = cause;
    }

    /** The refused version. */
    public long version() {
        return version;
    }

    /** Why the version could not be a delta: the layout change, or the change the encoding cannot carry. */
    public String reason() {
        return cause;
    }
}
