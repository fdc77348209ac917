package dev.stitch.router;

import dev.stitch.relay.UpstreamPool;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The router's connections to each member's sidecar (the data plane's {@link UpstreamPool}, one per member) and
 * the requests it has in flight to each. The in-flight count is the router's freshest load measure: it moves
 * with every forward, while a sidecar's reported {@code active_requests} arrives with its next state answer.
 */
final class ReplicaUpstreams implements AutoCloseable {

    /**
     * One member's pool, the router's requests in flight to it, and the exchanges relaying a response from it
     * (those a drained member's silence may cut, router.md §2.6).
     */
    record Upstream(UpstreamPool pool, AtomicInteger inflight, Set<RouterExchange> relaying) {
    }

    private final Duration connectTimeout;
    private final Map<String, Upstream> upstreams = new ConcurrentHashMap<>();

    ReplicaUpstreams(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    /** A member joined: its pool opens connections on first use. */
    void joined(String url) {
        upstreams.computeIfAbsent(url, u -> new Upstream(new UpstreamPool(URI.create(u), connectTimeout),
                new AtomicInteger(), ConcurrentHashMap.newKeySet()));
    }

    /** A member left: idle connections close; exchanges still relaying on one finish or break on their own. */
    void left(String url) {
        Upstream u = upstreams.remove(url);
        if (u != null) {
            // remove_worker is answered on an event loop, where closing a pooled channel must not be waited for
            Thread.ofVirtual().name("stitch-router-close-" + url).start(u.pool()::close);
        }
    }

    /** The member's upstream, or null once it left. */
    Upstream get(String url) {
        return upstreams.get(url);
    }

    /**
     * The member's state polls started failing: each response still being relayed from it is cut if it stays
     * silent for {@code silenceMs}, since a member that answers nothing else is unlikely to finish it.
     */
    void unreachable(String url, long silenceMs) {
        Upstream u = upstreams.get(url);
        if (u != null) {
            u.relaying().forEach(ex -> ex.replicaUnreachable(silenceMs));
        }
    }

    /** The router's requests in flight to {@code url}. */
    int inflight(String url) {
        Upstream u = upstreams.get(url);
        return u == null ? 0 : u.inflight().get();
    }

    @Override
    public void close() {
        upstreams.values().forEach(u -> u.pool().close());
        upstreams.clear();
    }
}
