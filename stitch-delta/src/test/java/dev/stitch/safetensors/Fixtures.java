package dev.stitch.safetensors;

import java.nio.file.Files;
import java.nio.file.Path;

/** Locates the shared golden fixtures (system property {@code stitch.fixtures}, else {@code ../shared/fixtures}). */
public final class Fixtures {

    private Fixtures() {
    }

    public static Path root() {
        String p = System.getProperty("stitch.fixtures");
        if (p != null && Files.isDirectory(Path.of(p))) {
            return Path.of(p);
        }
        Path fallback = Path.of("../shared/fixtures");
        if (Files.isDirectory(fallback)) {
            return fallback;
        }
        return Path.of("../../shared/fixtures");
    }

    public static Path path(String relative) {
        return root().resolve(relative);
    }
}
