package dev.stitch.apply;

import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One version to apply, as the board describes it: the unit the chain planner orders, the sync worker
 * verifies and stages, the engine adapters load and the host applier writes.
 *
 * @param version           the version
 * @param baseVersion       the version its transition builds on
 * @param runId             the run of its manifest, or null
 * @param backend           the manifest backend ({@code stitch_delta}, {@code disk_delta}, {@code sparse_delta},
 *                          {@code full}, ...)
 * @param loadFormat        the manifest load format, or null
 * @param directory         the version directory on this machine's file system
 * @param transitionFiles   payload files relative to {@code directory}, in manifest order
 * @param transitionWeights tensor names the transition touches, empty when unknown
 * @param artifacts         manifest artifacts by path (size and digest verified before use when given)
 * @param loadAnchor        load the complete checkpoint ({@code full/} or, slime layout, the directory)
 *                          instead of the transition
 */
public record VersionStep(long version, long baseVersion, String runId, String backend, String loadFormat,
                          Path directory, List<String> transitionFiles, List<String> transitionWeights,
                          Map<String, Artifact> artifacts, boolean loadAnchor) {

    public VersionStep {
        transitionFiles = List.copyOf(transitionFiles);
        transitionWeights = List.copyOf(transitionWeights);
        artifacts = Map.copyOf(artifacts);
    }

    /**
     * The step of a manifest read from a board: a {@code full}-backend version loads its checkpoint,
     * every other one replays its transition.
     *
     * @param directory the version directory the manifest was read from
     */
    public static VersionStep of(Manifest manifest, Path directory) {
        Map<String, Artifact> byPath = new LinkedHashMap<>();
        for (Artifact a : manifest.artifacts()) {
            byPath.put(a.path(), a);
        }
        return new VersionStep(manifest.version(), manifest.baseVersion(), manifest.runId(), manifest.backend(),
                manifest.loadFormat(), directory, manifest.transitionFiles(), manifest.transitionWeights(), byPath,
                DeltaFormat.isFullOnly(manifest.backend()));
    }

    /** A delta step without manifest artifacts (e.g. a slime-layout directory). */
    public static VersionStep delta(long version, String backend, Path directory, List<String> transitionFiles) {
        return new VersionStep(version, version - 1, null, backend, null, directory, transitionFiles, List.of(),
                Map.of(), false);
    }

    /** An anchor step that replaces the local weights with the version's full checkpoint. */
    public static VersionStep anchor(long version, Path directory) {
        return new VersionStep(version, version - 1, null, DeltaFormat.FULL.id(), null, directory, List.of(), List.of(), Map.of(),
                true);
    }

    /** This version loaded through its {@code full} checkpoint instead of its transition. */
    public VersionStep asAnchorLoad() {
        return new VersionStep(version, baseVersion, runId, backend, loadFormat, directory, transitionFiles,
                transitionWeights, artifacts, true);
    }

    /** This step attributed to {@code run} when its manifest names none. */
    public VersionStep inRun(String run) {
        if (runId != null || run == null) {
            return this;
        }
        return new VersionStep(version, baseVersion, run, backend, loadFormat, directory, transitionFiles,
                transitionWeights, artifacts, loadAnchor);
    }

    /** Whether the version carries {@code full} artifacts, i.e. can be loaded as an anchor. */
    public boolean hasFull() {
        for (Artifact a : artifacts.values()) {
            if (a.is(ArtifactKind.FULL)) {
                return true;
            }
        }
        return false;
    }

    /** Whether replaying this version needs payload files. */
    public boolean hasTransitionFiles() {
        return !transitionFiles.isEmpty();
    }

    /** Summed declared size of the transition and transition_meta artifacts (what a replay reads). */
    public long transitionBytes() {
        long n = 0;
        for (Artifact a : artifacts.values()) {
            if (a.is(ArtifactKind.TRANSITION) || a.is(ArtifactKind.TRANSITION_META)) {
                n += a.sizeBytes() == null ? 0 : a.sizeBytes();
            }
        }
        return n;
    }

    /** Summed declared size of the {@code full} artifacts (what an anchor load reads; 0 for a plain delta). */
    public long fullBytes() {
        long n = 0;
        for (Artifact a : artifacts.values()) {
            if (a.is(ArtifactKind.FULL)) {
                n += a.sizeBytes() == null ? 0 : a.sizeBytes();
            }
        }
        return n;
    }
}
