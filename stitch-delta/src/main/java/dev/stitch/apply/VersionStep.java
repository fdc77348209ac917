package dev.stitch.apply;

import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Artifact;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One version of a host-side apply chain, as the planner resolved it from the board.
 *
 * @param version         the version
 * @param baseVersion     the version it builds on
 * @param backend         {@code stitch_delta}, {@code disk_delta}, {@code sparse_delta} or {@code full}
 * @param directory       the version directory
 * @param transitionFiles payload files relative to {@code directory}
 * @param artifacts       manifest artifacts by path (size and digest verified before use when given)
 * @param loadAnchor      load the complete checkpoint ({@code full/} or, slime layout, the directory) instead of the transition
 * @param runId           the run of the chain, or null
 */
public record VersionStep(long version, long baseVersion, String backend, Path directory, List<String> transitionFiles,
                          Map<String, Artifact> artifacts, boolean loadAnchor, String runId) {

    public VersionStep {
        transitionFiles = List.copyOf(transitionFiles);
        artifacts = Map.copyOf(artifacts);
    }

    /** A delta step without manifest artifacts (e.g. a slime-layout directory). */
    public static VersionStep delta(long version, String backend, Path directory, List<String> transitionFiles) {
        return new VersionStep(version, version - 1, backend, directory, transitionFiles, Map.of(), false, null);
    }

    /** An anchor step that replaces the local weights with the version's full checkpoint. */
    public static VersionStep anchor(long version, Path directory) {
        return new VersionStep(version, version - 1, DeltaFormat.FULL.id(), directory, List.of(), Map.of(), true, null);
    }
}
