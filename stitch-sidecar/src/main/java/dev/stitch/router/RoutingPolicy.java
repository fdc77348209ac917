package dev.stitch.router;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import dev.stitch.protocol.VersionConstraint.Verdict;
import java.util.List;

/**
 * Chooses the replica for one request from the fleet's last known states (docs/protocol/router.md §2). Pure:
 * no I/O, no clock, no state of its own, so every rule is checked by unit tests.
 */
public final class RoutingPolicy {

    private RoutingPolicy() {
    }

    /**
     * Chooses a replica.
     *
     * @param fleet          every replica's view, in membership order (ties in load go to the earlier one)
     * @param constraint     the request's {@code weight_version} constraint
     * @param sessionReplica the URL the request's session was last routed to, or {@code null}
     */
    public static RoutingDecision choose(List<ReplicaView> fleet, VersionConstraint constraint, String sessionReplica) {
        ReplicaView previous = null;
        if (sessionReplica != null) {
            for (ReplicaView r : fleet) {
                if (r.url().equals(sessionReplica)) {
                    previous = r;
                    break;
                }
            }
        }
        // Affinity keeps a session on the replica that already holds its prefix cache, but never at the price
        // of a 409: it is kept only while that replica can serve the request as it is now.
        if (previous != null && satisfiable(previous, constraint)) {
            return new RoutingDecision.Forward(previous.url(), AffinityOutcome.KEPT);
        }
        ReplicaView best = null;
        for (ReplicaView r : fleet) {
            if (satisfiable(r, constraint) && (best == null || r.activeRequests() < best.activeRequests())) {
                best = r;
            }
        }
        // A session whose replica left the fleet or cannot serve this request moves: its affinity is broken.
        AffinityOutcome affinity = sessionReplica == null ? AffinityOutcome.NONE : AffinityOutcome.BROKEN;
        if (best != null) {
            return new RoutingDecision.Forward(best.url(), affinity);
        }
        return reject(fleet, constraint);
    }

    /** True when {@code r} is routable and serves a version the constraint accepts. */
    static boolean satisfiable(ReplicaView r, VersionConstraint constraint) {
        return r.routable() && constraint.evaluate(r.servedVersion()) == Verdict.SATISFIED;
    }

    /**
     * The answer when no replica satisfies the constraint. With no routable replica at all it is the sidecar's
     * 503 {@code EngineUnavailable}. Otherwise it is the sidecar's 409 body as the replica nearest to the target
     * would have written it: {@code NotReady} when some routable replica is behind the target (it may still get
     * there), {@code TooOld} when every routable replica is past an exact pin (no retry can succeed).
     */
    private static RoutingDecision reject(List<ReplicaView> fleet, VersionConstraint constraint) {
        long target = constraint.target();
        ReplicaView behind = null;
        ReplicaView ahead = null;
        long latest = -1;
        boolean catchingUp = false;
        for (ReplicaView r : fleet) {
            if (!r.reachable()) {
                continue;
            }
            latest = Math.max(latest, r.latestSeenVersion());
            // A replica catches up to the target when it has seen it on the board or is committing now; only
            // then is Retry-After an honest promise (router.md §2.4).
            if (r.servedVersion() < target && (r.latestSeenVersion() >= target || r.committing())) {
                catchingUp = true;
            }
            if (!r.routable()) {
                continue;
            }
            Verdict v = constraint.evaluate(r.servedVersion());
            if (v == Verdict.NOT_READY && (behind == null || r.servedVersion() > behind.servedVersion())) {
                behind = r;
            } else if (v == Verdict.TOO_OLD && (ahead == null || r.servedVersion() < ahead.servedVersion())) {
                ahead = r;
            }
        }
        if (behind == null && ahead == null) {
            return new RoutingDecision.Reject(503, "EngineUnavailable", ProxyErrors.engineUnavailable(), true);
        }
        if (behind != null || catchingUp) {
            long current = behind != null ? behind.servedVersion() : ahead.servedVersion();
            Verdict verdict = Verdict.NOT_READY;
            if (behind == null) {
                // Only replicas past the pin are routable, but a drained one is catching up to it: the request
                // can succeed later, so it is NotReady, not TooOld.
                current = nearestBehind(fleet, target);
            }
            return new RoutingDecision.Reject(409, ProxyErrors.conflictType(verdict),
                    ProxyErrors.versionConflict(verdict, current, target, latest), catchingUp);
        }
        return new RoutingDecision.Reject(409, ProxyErrors.conflictType(Verdict.TOO_OLD),
                ProxyErrors.versionConflict(Verdict.TOO_OLD, ahead.servedVersion(), target, latest), false);
    }

    private static long nearestBehind(List<ReplicaView> fleet, long target) {
        long best = -1;
        for (ReplicaView r : fleet) {
            if (r.reachable() && r.servedVersion() < target) {
                best = Math.max(best, r.servedVersion());
            }
        }
        return best;
    }
}
