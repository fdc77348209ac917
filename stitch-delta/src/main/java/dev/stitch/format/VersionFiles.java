package dev.stitch.format;

import java.nio.file.Path;
import java.util.List;

/**
 * A version's transition as its manifest (or a slime-layout directory) names it: what a format's
 * reader needs to turn the files into tensor patches.
 *
 * @param version         the version
 * @param baseVersion     the version it builds on
 * @param directory       the version directory
 * @param transitionFiles payload files relative to {@code directory}
 */
public record VersionFiles(long version, long baseVersion, Path directory, List<String> transitionFiles) {

    public VersionFiles {
        transitionFiles = List.copyOf(transitionFiles);
    }
}
