package dev.stitch.router;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The router's membership and the last known state of each member (docs/protocol/router.md §3). Members are kept
 * in the order they joined; that order breaks ties in load. Listeners hear of joins and departures so each
 * member gets exactly one state poller.
 */
public final class Fleet {
    private final Map<String, ReplicaView> members = new LinkedHashMap<>();
    private final Consumer<String> onJoin;
    private final Consumer<String> onLeave;

    public Fleet(Consumer<String> onJoin, Consumer<String> onLeave) {
        this.onJoin = onJoin;
        this.onLeave = onLeave;
    }

    /** A member URL in one spelling: absolute http(s), no trailing slash. */
    public static String normalise(String url) {
        String u = url.strip();
        while (u.endsWith("/")) {
            u = u.substring(0, u.length() - 1);
        }
        URI uri = URI.create(u);
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new IllegalArgumentException("a replica must be an http(s) URL with a host, got '" + url + "'");
        }
        return u;
    }

    /** Adds a member; false when it already was one. */
    public boolean add(String url) {
        String u = normalise(url);
        synchronized (this) {
            if (members.containsKey(u)) {
                return false;
            }
            members.put(u, ReplicaView.unknown(u));
        }
        onJoin.accept(u);
        return true;
    }

    /** Removes a member; false when it was none. */
    public boolean remove(String url) {
        String u = normalise(url);
        synchronized (this) {
            if (members.remove(u) == null) {
                return false;
            }
        }
        onLeave.accept(u);
        return true;
    }

    /** Makes the membership exactly {@code urls} (the replicas file), keeping the state of members that stay. */
    public void replaceWith(List<String> urls) {
        List<String> wanted = new ArrayList<>();
        for (String url : urls) {
            wanted.add(normalise(url));
        }
        for (String u : urls()) {
            if (!wanted.contains(u)) {
                remove(u);
            }
        }
        for (String u : wanted) {
            add(u);
        }
    }

    /** Records a state answer or failure; ignored when the member left meanwhile. */
    public synchronized void update(ReplicaView view) {
        members.computeIfPresent(view.url(), (k, old) -> view);
    }

    /** The last known view of a member, or null. */
    public synchronized ReplicaView view(String url) {
        return members.get(url);
    }

    public synchronized boolean contains(String url) {
        return members.containsKey(url);
    }

    public synchronized List<String> urls() {
        return List.copyOf(members.keySet());
    }

    /** Every member's view, in membership order. */
    public synchronized List<ReplicaView> snapshot() {
        return List.copyOf(members.values());
    }
}
