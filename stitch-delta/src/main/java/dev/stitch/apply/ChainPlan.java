package dev.stitch.apply;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** What {@link ChainPlanner} decided: nothing to do, a chain of versions to apply, or a refusal. */
public sealed interface ChainPlan {

    /** The copy already holds the target. */
    record UpToDate(long version) implements ChainPlan {
    }

    /**
     * Versions to apply in order, from {@code from} to {@code target}.
     *
     * @param from     the version the copy holds when the chain starts
     * @param target   the version it holds after
     * @param anchor   the anchor loaded first (replacing every tensor), if any
     * @param deltas   versions replayed in order, after the anchor if there is one
     * @param reason   why the anchor was chosen over the delta tail, or null for a plain tail
     * @param fallback the anchor chain to use instead when this delta chain fails verification
     */
    record Chain(long from, long target, Optional<VersionStep> anchor, List<VersionStep> deltas, String reason,
                 Optional<Chain> fallback) implements ChainPlan {

        public Chain {
            deltas = List.copyOf(deltas);
        }

        /** Every version of the chain in apply order: the anchor (loaded as such) first. */
        public List<VersionStep> steps() {
            if (anchor.isEmpty()) {
                return deltas;
            }
            List<VersionStep> all = new ArrayList<>(deltas.size() + 1);
            all.add(anchor.get().asAnchorLoad());
            all.addAll(deltas);
            return List.copyOf(all);
        }
    }

    /**
     * No chain reaches the target from what the board holds.
     *
     * @param kind    why, for callers that have another way out (e.g. a rebuild from the base)
     * @param message the whole story, for the operator
     */
    record Refusal(Kind kind, String message) implements ChainPlan {

        /** The refusal causes. */
        public enum Kind {
            /** The copy cannot be replayed onto and the board has no anchor to load. */
            NO_ANCHOR,
            /** A version of the tail has no manifest and no anchor above it avoids it. */
            MISSING_VERSION,
            /** A version does not build on the one before it, or belongs to another run. */
            BROKEN_CHAIN
        }
    }
}
