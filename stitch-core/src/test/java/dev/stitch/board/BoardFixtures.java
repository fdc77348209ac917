package dev.stitch.board;
import dev.stitch.testing.Fixtures;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;

/** Copies of fixture trees for tests that modify them (the fixtures themselves are read-only). */
final class BoardFixtures {
    private BoardFixtures() {
    }

    static Path boardV1() {
        return Fixtures.path("board-v1");
    }

    /** Copies {@code from} recursively into {@code to}. */
    static void copyTree(Path from, Path to) throws IOException {
        List<Path> all;
        try (Stream<Path> s = Files.walk(from)) {
            all = s.toList();
        }
        for (Path p : all) {
            Path target = to.resolve(from.relativize(p).toString());
            if (Files.isDirectory(p)) {
                Files.createDirectories(target);
            } else {
                Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }
}
