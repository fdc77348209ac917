package dev.stitch.board;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Makes other hosts' writes visible before a read, for boards on network volumes that cache
 * (e.g. a volume {@code reload()}); local file systems need nothing.
 */
@FunctionalInterface
public interface RefreshHook {
    /** The hook of a local file system: does nothing. */
    RefreshHook NONE = root -> { };

    /** Refreshes the view of {@code root}. */
    void refresh(Path root) throws IOException;
}
