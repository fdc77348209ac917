package dev.stitch.router;

import java.util.Map;
import java.util.Objects;

/**
 * What the router knows about one replica, from the last answer of its sidecar's {@code GET /stitch/state}
 * (docs/protocol/router.md §3). The routing and rolling-update policies read nothing else.
 *
 * @param url                   the sidecar's base URL, which also names the replica
 * @param reachable             false once a state poll failed; such a replica is drained until it answers again
 * @param servedVersion         {@code served_version}: the version requests admitted now are served at
 * @param latestSeenVersion     {@code latest_seen_version}: the newest version the sidecar has seen on the board
 * @param ready                 {@code ready}: the sidecar's readiness (its {@code /health})
 * @param admitting             {@code admission}: whether the sidecar's gate admits versioned requests now
 * @param activeRequests        {@code active_requests}: requests the sidecar is serving, the router's load measure
 * @param committing            {@code committing}: the sidecar is applying a new version
 * @param inflightExactVersions {@code inflight_exact_versions}: in-flight requests pinned by exact version, per version
 */
public record ReplicaView(String url, boolean reachable, long servedVersion, long latestSeenVersion, boolean ready,
                          boolean admitting, int activeRequests, boolean committing,
                          Map<Long, Integer> inflightExactVersions) {

    public ReplicaView {
        Objects.requireNonNull(url, "url");
        inflightExactVersions = Map.copyOf(inflightExactVersions);
    }

    /** A replica nothing is known about yet: not routable until its first state answer. */
    public static ReplicaView unknown(String url) {
        return new ReplicaView(url, false, -1, -1, false, false, 0, false, Map.of());
    }

    /** The same replica after a failed state poll: drained, its last known versions kept for {@code /fleet}. */
    public ReplicaView unreachable() {
        return new ReplicaView(url, false, servedVersion, latestSeenVersion, false, false, activeRequests, committing,
                inflightExactVersions);
    }

    /** The same view with another load: the router's own count of requests in flight here, when higher. */
    public ReplicaView withActiveRequests(int load) {
        return new ReplicaView(url, reachable, servedVersion, latestSeenVersion, ready, admitting, load, committing,
                inflightExactVersions);
    }

    /** True when a request may be sent here at all: answering, ready and admitting. */
    public boolean routable() {
        return reachable && ready && admitting;
    }

    /** In-flight requests pinned to exactly {@code version}. */
    public int inflightPinnedTo(long version) {
        return inflightExactVersions.getOrDefault(version, 0);
    }
}
