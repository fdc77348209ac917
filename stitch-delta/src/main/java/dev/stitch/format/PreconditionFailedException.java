package dev.stitch.format;

/**
 * A writer cannot express this version in its format (docs/formats/sparse-delta.md §2.8, docs/formats/anchors-and-fallback.md §6): the publisher
 * falls back to the next backend. Nothing was written.
 */
public class PreconditionFailedException extends RuntimeException {

    private final String backend;

    public PreconditionFailedException(String backend, String message) {
        super(backend + ": " + message);
        this.backend = backend;
    }

    /** The backend that refused ({@code sparse_delta}, {@code disk_delta}, ...). */
    public String backend() {
        return backend;
    }
}
