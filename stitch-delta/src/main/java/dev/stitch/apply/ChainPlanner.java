package dev.stitch.apply;

import dev.stitch.format.DeltaFormat;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Chooses the versions that bring a copy of the weights to a board version (docs/protocol/sync-and-engines.md §6.3
 * step 4, 10.1): the delta tail {@code current+1..target}, or the newest anchor and the shorter tail
 * after it when the copy cannot be replayed onto, the replay would be longer than the limit or larger
 * than the anchor, or a version of the tail is gone. Pure: it decides from what the caller read and
 * does no I/O; {@link BoardTail#read} does the reading it asks for.
 */
public final class ChainPlanner {

    private final int maxReplayVersions;

    /** @param maxReplayVersions the longest replay up to an anchor preferred over loading that anchor */
    public ChainPlanner(int maxReplayVersions) {
        if (maxReplayVersions < 0) {
            throw new IllegalArgumentException("the replay limit must be >= 0, got " + maxReplayVersions);
        }
        this.maxReplayVersions = maxReplayVersions;
    }

    public int maxReplayVersions() {
        return maxReplayVersions;
    }

    /**
     * The copy being brought forward.
     *
     * @param runId       the run its weights belong to, or null
     * @param version     the version its weights hold (0 = the base)
     * @param dirtyReason why its weights cannot be replayed onto (an interrupted apply, ...), or null
     */
    public record Copy(String runId, long version, String dirtyReason) {

        /** A clean copy at {@code version} of {@code runId}. */
        public static Copy clean(String runId, long version) {
            return new Copy(runId, version, null);
        }
    }

    /**
     * Why deltas cannot be replayed onto {@code copy} to reach {@code target} of run {@code runId}, or null
     * when they can.
     */
    public String replayBlocker(Copy copy, String runId, long target) {
        if (copy.dirtyReason() != null) {
            return copy.dirtyReason();
        }
        if (copy.runId() != null && runId != null && !copy.runId().equals(runId) && copy.version() > 0) {
            return "it holds run " + copy.runId() + ", the board is at run " + runId;
        }
        if (copy.version() > target) {
            return "it is at version " + copy.version() + ", newer than the target " + target;
        }
        return null;
    }

    /**
     * Whether a reader walking down from the target still needs the versions below {@code step}: not once
     * it found an anchor that will be loaded whatever lies below it.
     */
    public boolean needsVersionsBelow(VersionStep step, Copy copy, String runId, long target) {
        if (!step.hasFull()) {
            return true;
        }
        return replayBlocker(copy, runId, target) == null && step.version() - copy.version() <= maxReplayVersions;
    }

    /**
     * Plans from {@code copy} to {@code tail.target()} of run {@code runId}.
     *
     * @param tail the versions read from the board walking down from the target
     */
    public ChainPlan plan(Copy copy, String runId, BoardTail tail) {
        long target = tail.target();
        String blocker = replayBlocker(copy, runId, target);
        if (blocker == null && copy.version() == target) {
            return new ChainPlan.UpToDate(target);
        }
        for (Map.Entry<Long, VersionStep> e : tail.versions().entrySet()) {
            if (e.getValue().version() != e.getKey()) {
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.BROKEN_CHAIN, "manifest of version " + e.getKey()
                        + " says version " + e.getValue().version());
            }
        }
        long floor = blocker == null ? copy.version() : 0;
        NavigableMap<Long, VersionStep> usable = tail.versions().subMap(floor, false, target, true);
        VersionStep anchor = null;
        for (VersionStep s : usable.descendingMap().values()) {
            if (s.hasFull()) {
                anchor = s;
                break;
            }
        }
        OptionalLong missing = tail.missing();
        if (anchor == null) {
            if (blocker != null) {
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.NO_ANCHOR, "the copy cannot be replayed onto ("
                        + blocker + ") and the board has no anchor at or below " + target);
            }
            if (missing.isPresent()) {
                String what = tail.refusal() != null ? " was refused (" + tail.refusal() + ")"
                        : " has no manifest (missing or garbage-collected)";
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.MISSING_VERSION, "version " + missing.getAsLong()
                        + what + " and no anchor above it in " + (copy.version() + 1) + ".." + target);
            }
            return chain(copy.version(), target, null, usable.values(), runId, null, Optional.empty());
        }
        ChainPlan anchorPlan = chain(copy.version(), target, anchor,
                usable.tailMap(anchor.version(), false).values(), runId, blocker, Optional.empty());
        if (!(anchorPlan instanceof ChainPlan.Chain viaAnchor)) {
            return anchorPlan;
        }
        String why = blocker != null ? blocker : whyNotReplay(copy.version(), anchor, usable, missing);
        if (why == null) {
            ChainPlan deltaPlan = chain(copy.version(), target, null, usable.values(), runId, null,
                    Optional.of(viaAnchor));
            if (!(deltaPlan instanceof ChainPlan.Refusal broken)) {
                return deltaPlan;
            }
            why = broken.message();
        }
        return new ChainPlan.Chain(viaAnchor.from(), target, viaAnchor.anchor(), viaAnchor.deltas(), why,
                Optional.empty());
    }

    /** Why replaying {@code current+1..anchor} is not the better way, or null when it is. */
    private String whyNotReplay(long current, VersionStep anchor, NavigableMap<Long, VersionStep> usable,
                                OptionalLong missing) {
        if (missing.isPresent()) {
            return "version " + missing.getAsLong() + " has no manifest (missing or garbage-collected)";
        }
        if (anchor.version() - current > maxReplayVersions) {
            return "more than " + maxReplayVersions + " versions to replay";
        }
        long replayBytes = 0;
        for (VersionStep s : usable.headMap(anchor.version(), true).values()) {
            if (DeltaFormat.isFullOnly(s.backend())) {
                return "version " + s.version() + " ships only a full checkpoint";
            }
            replayBytes += s.transitionBytes();
        }
        if (replayBytes > anchor.fullBytes()) {
            return "replay is larger than the anchor";
        }
        return null;
    }

    /**
     * The chain {@code anchor?, deltas} with every step attributed to {@code runId}, or the refusal of a
     * version that does not build on the one before it or belongs to another run.
     */
    private static ChainPlan chain(long from, long target, VersionStep anchor, Iterable<VersionStep> deltas,
                                String runId, String reason, Optional<ChainPlan.Chain> fallback) {
        List<VersionStep> out = new ArrayList<>();
        long previous = anchor == null ? from : anchor.version();
        if (anchor != null) {
            String wrongRun = wrongRun(anchor, runId);
            if (wrongRun != null) {
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.BROKEN_CHAIN, wrongRun);
            }
        }
        for (VersionStep s : deltas) {
            if (s.baseVersion() != previous) {
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.BROKEN_CHAIN, "version " + s.version()
                        + " has base_version " + s.baseVersion() + ", expected " + previous
                        + " (the chain is not contiguous)");
            }
            String wrongRun = wrongRun(s, runId);
            if (wrongRun != null) {
                return new ChainPlan.Refusal(ChainPlan.Refusal.Kind.BROKEN_CHAIN, wrongRun);
            }
            out.add(s.inRun(runId));
            previous = s.version();
        }
        if (previous != target) {
            throw new IllegalArgumentException("the tail read ends at version " + previous + ", not at the target "
                    + target);
        }
        return new ChainPlan.Chain(from, target, Optional.ofNullable(anchor).map(a -> a.inRun(runId)), out, reason,
                fallback);
    }

    private static String wrongRun(VersionStep s, String runId) {
        if (s.runId() != null && runId != null && !Objects.equals(s.runId(), runId)) {
            return "version " + s.version() + " belongs to run " + s.runId() + ", the board pointer to run " + runId;
        }
        return null;
    }
}
