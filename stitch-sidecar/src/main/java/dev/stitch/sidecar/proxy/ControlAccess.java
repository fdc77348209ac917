package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Enforces a {@link ControlPolicy} on the sidecar routes: a state-changing route needs the bearer
 * token (401 otherwise), and the refresh-triggering ones share one token bucket (429 with
 * {@code Retry-After} beyond it). Read-only routes pass untouched. Shared by all connections.
 */
final class ControlAccess {

    /** Sidecar routes that make the worker refresh the board, hence need the token and the rate limit. */
    static final Set<String> REFRESH_ROUTES = Set.of("wake", "rpc_sync_from_bulletin_board");

    private static final String BEARER = "bearer ";

    /** Why a call was refused: the error type for the rejection counter, and the response to send. */
    record Refusal(String type, FullHttpResponse response) {
    }

    private final ControlPolicy policy;
    private final LongSupplier nanoClock;
    private double tokens;
    private long refilledAt;

    ControlAccess(ControlPolicy policy, LongSupplier nanoClock) {
        this.policy = policy;
        this.nanoClock = nanoClock;
        this.tokens = policy.refreshBurst();
        this.refilledAt = nanoClock.getAsLong();
    }

    /**
     * Checks one call of sidecar route {@code route}.
     *
     * @param authorization the request's {@code Authorization} header, or null
     * @return null when the call may proceed, else the refusal to answer with
     */
    Refusal check(String route, String authorization) {
        if (!REFRESH_ROUTES.contains(route)) {
            return null;
        }
        if (!policy.tokenMatches(bearerToken(authorization))) {
            FullHttpResponse r = ProxyMessages.jsonResponse(HttpResponseStatus.UNAUTHORIZED,
                    ProxyErrors.unauthorized(route), false);
            r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
            return new Refusal("Unauthorized", r);
        }
        long waitNanos = take();
        if (waitNanos > 0) {
            FullHttpResponse r = ProxyMessages.jsonResponse(HttpResponseStatus.TOO_MANY_REQUESTS,
                    ProxyErrors.rateLimited(route, policy.refreshPerSecond(), policy.refreshBurst()), false);
            r.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(Math.max(1, (waitNanos + 999_999_999L) / 1_000_000_000L)));
            return new Refusal("RateLimited", r);
        }
        return null;
    }

    /** Takes one token; returns 0 on success, else how long until one is available. */
    private synchronized long take() {
        if (policy.refreshPerSecond() == 0) {
            return 0;
        }
        long now = nanoClock.getAsLong();
        tokens = Math.min(policy.refreshBurst(), tokens + (now - refilledAt) * policy.refreshPerSecond() / 1e9);
        refilledAt = now;
        if (tokens >= 1) {
            tokens -= 1;
            return 0;
        }
        return (long) Math.ceil((1 - tokens) / policy.refreshPerSecond() * 1e9);
    }

    private static String bearerToken(String authorization) {
        if (authorization == null || authorization.length() <= BEARER.length()
                || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
            return null;
        }
        return authorization.substring(BEARER.length()).strip();
    }
}
