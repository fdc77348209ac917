package dev.stitch.sync;

import java.nio.file.Path;
import java.util.List;

/**
 * One verified version of a sync plan, as the engine adapters need it.
 *
 * @param version           the version number
 * @param baseVersion       the version its transition starts from
 * @param runId             the run of its manifest, or null
 * @param backend           the manifest backend
 * @param loadFormat        the manifest load format
 * @param directory         the version directory on the sidecar's file system
 * @param transitionFiles   payload files, relative to {@code directory}, in manifest order
 * @param transitionWeights tensor names touched, empty when unknown
 * @param transitionBytes   summed size of the transition (and transition_meta) artifacts
 * @param anchor            whether the version carries {@code full} artifacts
 * @param fullBytes         summed size of the {@code full} artifacts (0 when not an anchor)
 * @param manifest          the parsed manifest, or null when the board is not a {@code BulletinBoard}
 */
public record PlannedVersion(long version, long baseVersion, String runId, String backend, String loadFormat,
                             Path directory, List<String> transitionFiles, List<String> transitionWeights,
                             long transitionBytes, boolean anchor, long fullBytes,
                             dev.stitch.protocol.Manifest manifest) {

    public PlannedVersion {
        transitionFiles = List.copyOf(transitionFiles);
        transitionWeights = List.copyOf(transitionWeights);
    }

    /** Whether loading this version needs its payload files. */
    public boolean hasTransitionFiles() {
        return !transitionFiles.isEmpty();
    }
}
