package dev.stitch.format;

import dev.stitch.hash.Hash128;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;

/**
 * One file a format writer produced, as the publisher registers it with the board.
 *
 * @param path  relative POSIX path inside the version directory
 * @param kind  transition, transition_meta or full
 * @param size  bytes
 * @param xxh3  xxh3-128 of the bytes, computed while writing
 */
public record WrittenFile(String path, ArtifactKind kind, long size, Hash128 xxh3) {

    /** The manifest artifact for this file. */
    public Artifact toArtifact() {
        return Artifact.of(kind, path, size, xxh3);
    }
}
