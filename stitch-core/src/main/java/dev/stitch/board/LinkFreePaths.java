package dev.stitch.board;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Checks that an entry below a board root is reached without following a symbolic link
 * (docs/protocol/board.md §1.6). The root itself may be a link (a mount alias); everything below it is
 * inspected with {@link LinkOption#NOFOLLOW_LINKS}, so nothing a reader opens resolves outside the
 * root's real path.
 */
final class LinkFreePaths {
    private LinkFreePaths() {
    }

    /**
     * The first component of {@code file} below {@code root} that is a symbolic link, relative to the
     * root, or null when there is none. A missing component ends the walk: opening the file then reports
     * it as missing.
     *
     * @throws IllegalArgumentException when {@code file} does not lie below {@code root}
     */
    static String firstLink(Path root, Path file) throws IOException {
        Path base = root.toAbsolutePath().normalize();
        Path target = file.toAbsolutePath().normalize();
        if (!target.startsWith(base) || target.equals(base)) {
            throw new IllegalArgumentException(file + " does not lie below the board root " + root);
        }
        Path current = base;
        for (Path name : base.relativize(target)) {
            current = current.resolve(name);
            BasicFileAttributes attributes;
            try {
                attributes = Files.readAttributes(current, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                return null;
            }
            if (attributes.isSymbolicLink()) {
                return ArtifactVerifier.relative(base, current);
            }
        }
        return null;
    }

    /** Throws {@link BoardLinkException} naming {@code file} when it is reached through a symbolic link. */
    static void requireNoLink(Path root, Path file) throws IOException {
        String link = firstLink(root, file);
        if (link != null) {
            throw new BoardLinkException(ArtifactVerifier.relative(root, file), link);
        }
    }
}
