package dev.stitch.format;

import dev.stitch.encode.TensorChange;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Writes the transition of one version, in one format, into a version directory. */
public interface VersionWriter extends AutoCloseable {

    /**
     * Writes the files of {@code changes} into {@code dir}.
     *
     * @throws PreconditionFailedException when the format cannot express the version (nothing written)
     */
    WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException;

    /** Frees memory the writer keeps between versions; writers without any have nothing to do. */
    @Override
    default void close() {
    }
}
