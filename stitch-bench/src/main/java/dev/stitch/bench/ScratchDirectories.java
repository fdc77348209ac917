package dev.stitch.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Removal of the temporary boards and checkpoints the benchmarks and the demo work in. */
public final class ScratchDirectories {

    private ScratchDirectories() {
    }

    /** Deletes {@code root} and everything below it; nothing happens when it does not exist. */
    public static void delete(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** As {@link #delete}, for clean-up in {@code finally}: a leftover is reported on stderr, never thrown. */
    public static void deleteQuietly(Path root, String who) {
        try {
            delete(root);
        } catch (IOException e) {
            System.err.println(who + ": could not remove " + root + ": " + e.getMessage());
        }
    }
}
