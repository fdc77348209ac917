package dev.stitch.format;

import dev.stitch.board.ArtifactWriter;
import dev.stitch.board.AtomicFiles;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import java.io.IOException;
import java.nio.file.Path;

/** Writes one artifact of a version atomically (temp, fsync, rename) and describes it. */
public final class FormatFiles {

    private FormatFiles() {
    }

    /**
     * Writes {@code dir/relative} through {@code body} and returns its record; parent directories
     * inside {@code dir} are created.
     */
    public static WrittenFile write(Path dir, String relative, ArtifactKind kind, ArtifactWriter body) throws IOException {
        String bad = Artifact.pathProblem(relative);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        Path target = dir.resolve(relative);
        AtomicFiles.DURABLE.createDirectories(target.getParent());
        AtomicFiles.WrittenFile w = AtomicFiles.DURABLE.write(target, body);
        return new WrittenFile(relative, kind, w.sizeBytes(), w.xxh3());
    }
}
