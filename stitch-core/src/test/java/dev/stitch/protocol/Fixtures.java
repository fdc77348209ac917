package dev.stitch.protocol;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates the shared golden fixtures: system property {@code stitch.fixtures}, else {@code ../shared/fixtures}. */
public final class Fixtures {
    private Fixtures() {
    }

    public static Path root() {
        String prop = System.getProperty("stitch.fixtures");
        Path p = prop != null ? Path.of(prop) : Path.of("../shared/fixtures");
        if (!Files.isDirectory(p)) {
            Path fromModule = Path.of("../../shared/fixtures");
            if (Files.isDirectory(fromModule)) {
                return fromModule.toAbsolutePath().normalize();
            }
        }
        return p.toAbsolutePath().normalize();
    }

    public static Path path(String relative) {
        return root().resolve(relative);
    }
}
