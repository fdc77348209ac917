package dev.stitch.sidecar.proxy;

import java.util.Set;

/**
 * Which kind of route a request target names (docs/protocol/sidecar-http.md §4.1): versioned (gated and
 * stamped), sidecar-owned (answered by the control plane), blocked (403), or pass-through. Every
 * request target becomes a route name through {@link #routeOf(String)} and nowhere else, so the
 * spelling rules for paths live in one place.
 */
final class RouteTable {

    /** How the data plane treats a route. */
    enum Kind {
        /** Gated by admission, rewritten and stamped (docs/protocol/sidecar-http.md §4.3–4.5). */
        VERSIONED,
        /** Answered by the control plane without the gate (docs/protocol/sidecar-http.md §5). */
        SIDECAR,
        /** Never forwarded: 403 {@code RouteBlocked} for any method. */
        BLOCKED,
        /** Forwarded as is, ungated and unstamped (docs/protocol/sidecar-http.md §4.6). */
        PASS_THROUGH,
        /** A target whose decoded path is ambiguous or invalid: 400, never forwarded. */
        MALFORMED
    }

    /**
     * One classified request target.
     *
     * @param name  the route: the decoded, normalised path with leading and trailing slashes stripped
     * @param kind  how the data plane treats it
     * @param path  the normalised path, percent-encoded again, that the engine is sent (what was checked)
     * @param why   for {@link Kind#MALFORMED}, what is wrong with the target; otherwise null
     */
    record Route(String name, Kind kind, String path, String why) {

        /** The {@code route} label of {@code requests_total}: known routes by name, anything else "other". */
        String label() {
            return kind == Kind.PASS_THROUGH || kind == Kind.MALFORMED ? "other" : name;
        }

        /** The request target sent to the engine: the checked path plus the client's query string. */
        String forwardTarget(String requestTarget) {
            int q = requestTarget.indexOf('?');
            return q < 0 ? path : path + requestTarget.substring(q);
        }
    }

    private final Set<String> versioned;

    /** A table whose versioned routes are {@code versioned} (names already slash-stripped). */
    RouteTable(Set<String> versioned) {
        this.versioned = Set.copyOf(versioned);
    }

    /**
     * Classifies a raw request target (origin form or absolute form, query allowed). Routes are matched
     * on the percent-decoded path with dot segments resolved and repeated slashes folded, because the
     * engine's HTTP stack decodes the path before it routes (docs/protocol/sidecar-http.md §4.1);
     * a target whose decoding is ambiguous is {@link Kind#MALFORMED}.
     */
    Route classify(String requestTarget) {
        String raw = pathOf(requestTarget);
        String decoded;
        try {
            decoded = RoutePath.normalise(raw);
        } catch (IllegalArgumentException e) {
            return new Route(stripSlashes(raw), Kind.MALFORMED, raw, e.getMessage());
        }
        String name = stripSlashes(decoded);
        return new Route(name, kindOf(name), RoutePath.encode(decoded), null);
    }

    /**
     * The kind of a route name; blocked and sidecar routes win over a versioned entry of the same
     * name, and a blocked route is recognised in any letter case (an engine behind a case-insensitive
     * router must not be reachable through a spelling variant).
     */
    Kind kindOf(String name) {
        if (ProxyServer.BLOCKED_ROUTES.contains(name) || ProxyServer.BLOCKED_ROUTES.contains(name.toLowerCase(java.util.Locale.ROOT))) {
            return Kind.BLOCKED;
        }
        if (ProxyServer.SIDECAR_ROUTES.contains(name)) {
            return Kind.SIDECAR;
        }
        return versioned.contains(name) ? Kind.VERSIONED : Kind.PASS_THROUGH;
    }

    /**
     * The route named by a raw request target: its decoded, normalised path without query string and
     * without the scheme and authority of an absolute-form target, with leading and trailing slashes
     * stripped; the raw path, stripped, when it cannot be decoded.
     */
    static String routeOf(String requestTarget) {
        String raw = pathOf(requestTarget);
        try {
            return stripSlashes(RoutePath.normalise(raw));
        } catch (IllegalArgumentException e) {
            return stripSlashes(raw);
        }
    }

    /** A configured route name in the form {@link #routeOf(String)} produces. */
    static String routeName(String configured) {
        return stripSlashes(configured.trim());
    }

    private static String pathOf(String requestTarget) {
        int q = requestTarget.indexOf('?');
        String path = q < 0 ? requestTarget : requestTarget.substring(0, q);
        if (path.startsWith("http://") || path.startsWith("https://")) {
            int slash = path.indexOf('/', path.indexOf("//") + 2);
            path = slash < 0 ? "/" : path.substring(slash);
        }
        return path;
    }

    private static String stripSlashes(String path) {
        int from = 0;
        int to = path.length();
        while (from < to && path.charAt(from) == '/') {
            from++;
        }
        while (to > from && path.charAt(to - 1) == '/') {
            to--;
        }
        return path.substring(from, to);
    }
}
