package dev.stitch.router;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Answers {@code POST /stitch/commit_permission} so a new version rolls across the fleet instead of landing
 * everywhere at once (docs/protocol/router.md §4). Two rules:
 * <ul>
 *   <li>{@code --max-committing}: at most that many replicas commit at the same time, so the rest keep serving;</li>
 *   <li>{@code --hold-previous K}: while requests pinned to the version being replaced are in flight anywhere,
 *       or the router routed one within the last {@link #DEMAND_WINDOW_MS}, K replicas other than the asking one
 *       stay on it, so a retried or follow-up pinned request still finds a replica that serves it instead of a
 *       409 {@code WeightVersionTooOld}. The window matters because short requests are rarely caught in flight by
 *       a state answer, while an agent's next turn pinned to the same version is seconds away.</li>
 * </ul>
 * A grant counts as committing from the moment it is given until the replica's state shows the new version
 * (or the grant is older than {@code grantLeaseMs}, which covers a sidecar that died after asking): between the
 * grant and its next state answer the replica would otherwise look idle and a second grant could slip through.
 * Pure apart from that table of grants; the caller passes the clock.
 */
public final class RollingUpdatePolicy {
    private final CommitLimit maxCommitting;
    private final int holdPrevious;
    private final long retryAfterMs;
    private final long grantLeaseMs;
    /** replica URL → the grant: target version and when it was given. */
    private final Map<String, Grant> grants = new HashMap<>();
    /** exact-pinned version → when the router last routed a request pinned to it. */
    private final Map<Long, Long> pinnedDemand = new HashMap<>();

    /** How long a routed exact pin counts as demand for its version. */
    public static final long DEMAND_WINDOW_MS = 2_000;

    private record Grant(long to, long atMs) {
    }

    public RollingUpdatePolicy(CommitLimit maxCommitting, int holdPrevious, long retryAfterMs, long grantLeaseMs) {
        this.maxCommitting = Objects.requireNonNull(maxCommitting, "maxCommitting");
        if (holdPrevious < 0 || retryAfterMs < 1 || grantLeaseMs < 1) {
            throw new IllegalArgumentException("holdPrevious must be >= 0, retryAfterMs and grantLeaseMs positive");
        }
        this.holdPrevious = holdPrevious;
        this.retryAfterMs = retryAfterMs;
        this.grantLeaseMs = grantLeaseMs;
    }

    /**
     * Decides whether {@code replica} may commit from {@code from} to {@code to} now.
     *
     * @param fleet the last known view of every replica (the asking one included when known)
     * @param nowMs the caller's clock, used only to age grants
     */
    public synchronized CommitPermission decide(List<ReplicaView> fleet, String replica, long from, long to, long nowMs) {
        expire(fleet, nowMs);
        int committing = 0;
        for (ReplicaView r : fleet) {
            if (r.url().equals(replica)) {
                continue;
            }
            if (r.reachable() && r.committing() || grants.containsKey(r.url())) {
                committing++;
            }
        }
        if (committing >= maxCommitting.replicas(fleet.size())) {
            return new CommitPermission.Denied(retryAfterMs, "max_committing");
        }
        if (holdPrevious > 0 && from != to) {
            int pinnedToFrom = 0;
            int stayingOnFrom = 0;
            for (ReplicaView r : fleet) {
                if (!r.reachable()) {
                    continue;
                }
                pinnedToFrom += r.inflightPinnedTo(from);
                if (!r.url().equals(replica) && r.servedVersion() == from && !r.committing()
                        && !grants.containsKey(r.url())) {
                    stayingOnFrom++;
                }
            }
            Long lastPinned = pinnedDemand.get(from);
            boolean recentDemand = lastPinned != null && nowMs - lastPinned < DEMAND_WINDOW_MS;
            if ((pinnedToFrom > 0 || recentDemand) && stayingOnFrom < holdPrevious) {
                return new CommitPermission.Denied(retryAfterMs, "hold_previous");
            }
        }
        grants.put(replica, new Grant(to, nowMs));
        return new CommitPermission.Granted();
    }

    /** The router routed a request pinned exactly to {@code version} at {@code nowMs}. */
    public synchronized void pinnedRouted(long version, long nowMs) {
        pinnedDemand.put(version, nowMs);
        if (pinnedDemand.size() > 64) {
            pinnedDemand.values().removeIf(at -> nowMs - at > DEMAND_WINDOW_MS);
        }
    }

    /** Replicas holding a grant that has not yet shown up as served, for {@code /fleet}. */
    public synchronized int outstandingGrants() {
        return grants.size();
    }

    private void expire(List<ReplicaView> fleet, long nowMs) {
        Map<String, ReplicaView> byUrl = new HashMap<>();
        for (ReplicaView r : fleet) {
            byUrl.put(r.url(), r);
        }
        grants.entrySet().removeIf(e -> {
            ReplicaView r = byUrl.get(e.getKey());
            return r == null || nowMs - e.getValue().atMs() >= grantLeaseMs
                    || r.reachable() && r.servedVersion() >= e.getValue().to() && !r.committing();
        });
    }
}
