package dev.stitch.board;

import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Sizes and version directories of a remote board's local cache. */
final class CacheSpace {
    private CacheSpace() {
    }

    /** Bytes of the regular files under {@code dir} (0 when it does not exist). */
    static long bytesUnder(Path dir) throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            long total = 0;
            for (Path p : (Iterable<Path>) s::iterator) {
                try {
                    if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                        total += Files.size(p);
                    }
                } catch (NoSuchFileException gone) {
                    // removed while walking: it no longer takes room
                }
            }
            return total;
        }
    }

    /** The version directories under {@code versions}, oldest first. */
    static List<Path> versionDirectories(Path versions) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(versions, LinkOption.NOFOLLOW_LINKS)) {
            return out;
        }
        try (Stream<Path> s = Files.list(versions)) {
            s.filter(p -> WeightIdentity.parse(p.getFileName().toString()).isPresent()).forEach(out::add);
        }
        out.sort(Comparator.comparingLong(p -> WeightIdentity.parse(p.getFileName().toString()).getAsLong()));
        return out;
    }
}
