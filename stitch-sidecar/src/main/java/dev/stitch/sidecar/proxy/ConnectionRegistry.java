package dev.stitch.sidecar.proxy;

import java.util.Iterator;
import java.util.LinkedHashSet;

/**
 * The connection cap of one {@link ProxyServer} (security.md, "Limits"). Held connections are kept in
 * the order they last became idle; at the cap a new connection takes the place of the longest-idle
 * one, so idle sockets can never lock out a client with work to do. When every held connection is
 * busy, a small reserved slice still admits connections for the sidecar routes, so {@code /health}
 * keeps answering; beyond that a connection is closed as soon as it is accepted, which costs less
 * than reading a request just to refuse it.
 */
final class ConnectionRegistry {

    /** What a new connection is allowed to do. */
    enum Admission {
        /** Served like any connection. */
        HELD,
        /** Over the cap: only sidecar routes are answered, then the connection closes. */
        RESERVED,
        /** Closed at once. */
        REFUSED
    }

    private final int maxConnections;
    private final int reserved;
    private final ProxyStats stats;
    private final LinkedHashSet<ClientConnection> held = new LinkedHashSet<>();
    private int inReserve;

    ConnectionRegistry(ConnectionLimits limits, ProxyStats stats) {
        this.maxConnections = limits.maxConnections();
        this.reserved = limits.reservedConnections();
        this.stats = stats;
    }

    /** Admits a connection that has just been accepted; may close an idle one to make room. */
    Admission admit(ClientConnection c) {
        ClientConnection victim = null;
        Admission a;
        synchronized (this) {
            if (held.size() < maxConnections) {
                held.add(c);
                a = Admission.HELD;
            } else if ((victim = longestIdle()) != null) {
                held.remove(victim);
                held.add(c);
                a = Admission.HELD;
            } else if (inReserve < reserved) {
                inReserve++;
                a = Admission.RESERVED;
            } else {
                a = Admission.REFUSED;
            }
            stats.openConnections(held.size() + inReserve);
        }
        if (victim != null) {
            victim.evict();
        }
        return a;
    }

    /** Moves a held connection to the young end: it has just finished a response. */
    synchronized void becameIdle(ClientConnection c) {
        if (held.remove(c)) {
            held.add(c);
        }
    }

    /** Forgets a closed connection. */
    synchronized void closed(ClientConnection c, Admission admission) {
        if (admission == Admission.HELD) {
            held.remove(c);
        } else if (admission == Admission.RESERVED) {
            inReserve--;
        }
        stats.openConnections(held.size() + inReserve);
    }

    private ClientConnection longestIdle() {
        Iterator<ClientConnection> it = held.iterator();
        while (it.hasNext()) {
            ClientConnection c = it.next();
            if (!c.busy()) {
                return c;
            }
        }
        return null;
    }
}
