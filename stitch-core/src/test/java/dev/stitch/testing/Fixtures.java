package dev.stitch.testing;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Locates the golden fixtures produced by the upstream Python code (provenance in
 * {@code stitch-core/src/test/fixtures/README.md}). They live in the repository, so a clone with
 * nothing beside it passes its tests; every module's tests find them by walking up from the
 * working directory Surefire gives them (the module directory) to the repository root.
 */
public final class Fixtures {

    /** The fixtures directory relative to the repository root. */
    public static final String LOCATION = "stitch-core/src/test/fixtures";

    private static volatile Path root;

    private Fixtures() {
    }

    /** The fixtures directory, absolute. */
    public static Path root() {
        Path r = root;
        if (r == null) {
            r = locate(Path.of("").toAbsolutePath());
            root = r;
        }
        return r;
    }

    /** A file or directory under the fixtures directory. */
    public static Path path(String relative) {
        return root().resolve(relative);
    }

    static Path locate(Path start) {
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve(LOCATION);
            if (Files.isDirectory(candidate)) {
                return candidate.normalize();
            }
        }
        throw new UncheckedIOException(new NoSuchFileException(LOCATION,
                null, "no " + LOCATION + " in " + start + " or any directory above it"));
    }
}
