package dev.stitch.router;

/** The routing policy's answer for one request: forward it, or answer it at the router. */
public sealed interface RoutingDecision permits RoutingDecision.Forward, RoutingDecision.Reject {

    /**
     * Send the request to {@code replica}'s sidecar, which admits and stamps it as usual.
     *
     * @param replica  the chosen replica's URL
     * @param affinity what became of the request's session affinity
     */
    record Forward(String replica, AffinityOutcome affinity) implements RoutingDecision {
    }

    /**
     * Answer at the router with the sidecar's own error body (docs/protocol/sidecar-http.md §4.7).
     *
     * @param status     the HTTP status: 409 when no replica satisfies the constraint, 503 when none is routable
     * @param reason     the error type ({@code WeightVersionNotReady}, {@code WeightVersionTooOld},
     *                   {@code EngineUnavailable}); the {@code /metrics} label
     * @param body       the JSON body, built by {@link dev.stitch.protocol.ProxyErrors}
     * @param retryAfter whether to send {@code Retry-After}: only when waiting can help
     */
    record Reject(int status, String reason, byte[] body, boolean retryAfter) implements RoutingDecision {
    }
}
