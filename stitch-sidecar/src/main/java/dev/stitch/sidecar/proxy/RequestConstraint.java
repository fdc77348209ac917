package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.VersionConstraint;
import java.util.Set;

/**
 * The sidecar's request classification, opened to the router (docs/protocol/router.md §2.1): the router must
 * judge a request exactly as the sidecar behind it will, so it reuses {@link RouteTable} and
 * {@link RequestRewrite} instead of parsing bodies a second way. The router forwards the original bytes; the
 * rewriting shown here happens again, for real, in the chosen sidecar.
 */
public final class RequestConstraint {
    private final RouteTable routes;

    /** Routes (slashes stripped) the sidecars gate and stamp, usually {@link ProxyServer#DEFAULT_VERSIONED_ROUTES}. */
    public RequestConstraint(Set<String> versionedRoutes) {
        this.routes = new RouteTable(versionedRoutes);
    }

    /** What the router does with a request. */
    public sealed interface Reading permits Route, Refuse {
    }

    /**
     * Route the request by {@code constraint} ({@link VersionConstraint#NONE} for unversioned routes).
     *
     * @param versioned whether the sidecar gates this route
     */
    public record Route(VersionConstraint constraint, boolean versioned) implements Reading {
    }

    /** Answer at the router with the sidecar's own error: the sidecar would refuse it the same way. */
    public record Refuse(int status, String type, byte[] body) implements Reading {
    }

    /** The route name of a request target as the sidecar sees it (for the router's own routes). */
    public static String routeOf(String requestTarget) {
        return RouteTable.routeOf(requestTarget);
    }

    /**
     * Reads one request.
     *
     * @param requestTarget the request target as received
     * @param contentType   the {@code Content-Type}, or null
     * @param body          the complete body; not modified
     */
    public Reading read(String requestTarget, String contentType, byte[] body) {
        RouteTable.Route route = routes.classify(requestTarget);
        // no copy: the rewrite splices into new arrays and never writes into the body it reads
        RequestRewrite.Decision d = RequestRewrite.decide(route, contentType, body);
        return switch (d) {
            case RequestRewrite.Answer a -> new Refuse(a.status(), a.rejectionType(), a.body());
            case RequestRewrite.Admit admit -> new Route(admit.request().constraint(), true);
            case RequestRewrite.Forward f -> new Route(VersionConstraint.NONE, false);
            case RequestRewrite.Endpoint e -> new Route(VersionConstraint.NONE, false);
        };
    }
}
