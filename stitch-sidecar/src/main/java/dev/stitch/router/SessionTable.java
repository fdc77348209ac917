package dev.stitch.router;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Session key → the replica the session was last routed to (docs/protocol/router.md §2.3). Bounded, least
 * recently used first out, so a client that invents a key per request cannot grow the router without limit.
 */
public final class SessionTable {
    private final Map<String, String> lastReplica;

    public SessionTable(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive, got " + capacity);
        }
        this.lastReplica = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
                return size() > capacity;
            }
        };
    }

    /** The replica {@code session} was last routed to, or {@code null} (also for a null key). */
    public synchronized String lastReplica(String session) {
        return session == null ? null : lastReplica.get(session);
    }

    /** Records that {@code session} was routed to {@code replica}; a null session is ignored. */
    public synchronized void routed(String session, String replica) {
        if (session != null) {
            lastReplica.put(session, replica);
        }
    }

    public synchronized int size() {
        return lastReplica.size();
    }
}
