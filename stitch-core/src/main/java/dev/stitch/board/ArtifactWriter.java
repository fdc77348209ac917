package dev.stitch.board;

import java.io.IOException;

/** Writes one artifact's bytes; the board hashes and counts them on the way to disk. */
@FunctionalInterface
public interface ArtifactWriter {
    /** Writes the whole file to {@code out}; do not close it. */
    void write(ArtifactOutput out) throws IOException;
}
