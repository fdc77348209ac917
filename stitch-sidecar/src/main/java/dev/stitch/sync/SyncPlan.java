package dev.stitch.sync;

import dev.stitch.apply.ChainPlan;
import dev.stitch.apply.VersionStep;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What one commit applies: from the served version to {@code target}, either by replaying deltas or
 * by loading an anchor and the deltas after it (docs/protocol/sync-and-engines.md §6.3).
 *
 * @param kind             delta, anchor, noop or reset
 * @param runId            the run the target belongs to
 * @param from             the version the chain starts from: the engine's served version, or the adapter's
 *                         staging copy's (see {@link EngineAdapter#planFrom})
 * @param target           the version it serves after
 * @param anchor           the anchor loaded first (anchor plans only)
 * @param deltas           versions replayed in order (after the anchor, if any)
 * @param touchedWeights   union of the touched tensor names, empty when unknown (see {@link #weightsKnown})
 * @param weightsKnown     false when some version has files but no names
 * @param weightsDigests   {@code metadata.weights_digest} of the plan's versions that record one, by version:
 *                         what an engine that reports its digest must serve after each load (6.5)
 */
public record SyncPlan(Kind kind, String runId, long from, long target, Optional<VersionStep> anchor,
                       List<VersionStep> deltas, Set<String> touchedWeights, boolean weightsKnown,
                       Map<Long, String> weightsDigests) {

    public enum Kind {
        DELTA("delta"), ANCHOR("anchor"), NOOP("noop"), RESET("reset");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    public SyncPlan {
        deltas = List.copyOf(deltas);
        touchedWeights = Set.copyOf(touchedWeights);
        weightsDigests = Map.copyOf(weightsDigests);
    }

    /** A plan whose versions record no weights digest. */
    public SyncPlan(Kind kind, String runId, long from, long target, Optional<VersionStep> anchor,
                    List<VersionStep> deltas, Set<String> touchedWeights, boolean weightsKnown) {
        this(kind, runId, from, target, anchor, deltas, touchedWeights, weightsKnown, Map.of());
    }

    /** This plan with the recorded weights digests of its versions. */
    public SyncPlan withWeightsDigests(Map<Long, String> digests) {
        return new SyncPlan(kind, runId, from, target, anchor, deltas, touchedWeights, weightsKnown, digests);
    }

    /** The plan of a run switch: back to the base checkpoint. */
    public static SyncPlan reset(String newRunId, long from) {
        return new SyncPlan(Kind.RESET, newRunId, from, 0, Optional.empty(), List.of(), Set.of(), true);
    }

    /**
     * The plan of a chain towards the pointer of run {@code runId}. A chain without an anchor whose
     * versions carry no payload files is a label-only no-op unless {@code reload} says the adapter's
     * copy must be rebuilt anyway.
     */
    public static SyncPlan of(ChainPlan.Chain chain, String runId, boolean reload) {
        if (chain.anchor().isPresent()) {
            // an anchor load replaces every tensor, so the touched names are not the whole story
            return new SyncPlan(Kind.ANCHOR, runId, chain.from(), chain.target(), chain.anchor(), chain.deltas(),
                    Set.of(), false);
        }
        Set<String> touched = new LinkedHashSet<>();
        // the engine serves another version than the chain starts from: only a whole reload is right
        boolean known = !reload;
        boolean empty = !reload;
        for (VersionStep v : chain.deltas()) {
            if (v.hasTransitionFiles()) {
                empty = false;
                if (v.transitionWeights().isEmpty()) {
                    known = false;
                }
            }
            touched.addAll(v.transitionWeights());
        }
        return new SyncPlan(empty ? Kind.NOOP : Kind.DELTA, runId, chain.from(), chain.target(), Optional.empty(),
                chain.deltas(), known ? touched : Set.of(), known);
    }

    /** Every version of the plan in apply order (the anchor first). */
    public List<VersionStep> versions() {
        if (anchor.isEmpty()) {
            return deltas;
        }
        List<VersionStep> all = new ArrayList<>(deltas.size() + 1);
        all.add(anchor.get());
        all.addAll(deltas);
        return List.copyOf(all);
    }

    /** Number of transition files over the replayed deltas. */
    public int transitionFileCount() {
        int n = 0;
        for (VersionStep v : deltas) {
            n += v.transitionFiles().size();
        }
        return n;
    }
}
