package dev.stitch.protocol;

import java.nio.charset.StandardCharsets;

/**
 * Bodies of the sidecar's own error responses (docs/protocol/sidecar-http.md §4.7), as compact UTF-8 JSON with
 * the key order fixed by the spec, so both upstream client generations parse them.
 */
public final class ProxyErrors {
    /** Value of the {@code Retry-After} header on retryable errors (409, 502, 503). */
    public static final String RETRY_AFTER_SECONDS = "1";

    /** The fixed message of 503 {@code EngineUnavailable}. */
    public static final String ENGINE_UNAVAILABLE_MESSAGE = "the local inference engine is unavailable";

    private ProxyErrors() {
    }

    /** 400 {@code InvalidWeightVersion}. */
    public static byte[] invalidWeightVersion(String message) {
        return simple("InvalidWeightVersion", message, null);
    }

    /** 400 {@code InvalidRequest} (malformed JSON, bad {@code extra_key} type, bad wake body). */
    public static byte[] invalidRequest(String message) {
        return simple("InvalidRequest", message, null);
    }

    /** 403 {@code RouteBlocked}; {@code route} is the path with slashes stripped. */
    public static byte[] routeBlocked(String route) {
        return simple("RouteBlocked", "/" + route + " is managed by the weight-sync sidecar and is not proxied", null);
    }

    /** 413 {@code RequestTooLarge}. */
    public static byte[] requestTooLarge(long maxBytes) {
        return simple("RequestTooLarge", "request body exceeds " + maxBytes + " bytes", null);
    }

    /** 502 {@code EngineUnavailable}: the engine connection broke or its answer was unparseable. */
    public static byte[] engineBroken(String message) {
        return simple("EngineUnavailable", message, Boolean.TRUE);
    }

    /** 503 {@code EngineUnavailable}: the engine is unreachable or its weights are in an unknown state. */
    public static byte[] engineUnavailable() {
        return simple("EngineUnavailable", ENGINE_UNAVAILABLE_MESSAGE, Boolean.TRUE);
    }

    /** 503 {@code RequestPreempted}: aborted by a drain timeout. */
    public static byte[] requestPreempted(String message) {
        return simple("RequestPreempted", message, Boolean.TRUE);
    }

    /** 504 {@code EngineTimeout}. */
    public static byte[] engineTimeout(String message) {
        return simple("EngineTimeout", message, Boolean.TRUE);
    }

    /** 401 {@code Unauthorized}: a state-changing control route without the configured bearer token. */
    public static byte[] unauthorized(String route) {
        return simple("Unauthorized", "/" + route + " requires 'Authorization: Bearer <control token>'", null);
    }

    /** 429 {@code RateLimited}: a refresh-triggering control route called faster than its rate limit. */
    public static byte[] rateLimited(String route, double perSecond, int burst) {
        return simple("RateLimited", "/" + route + " is limited to " + perSecond + " calls per second (burst " + burst
                + ")", Boolean.TRUE);
    }

    /** 503 {@code TooManyConnections}: the connection was accepted beyond the connection cap. */
    public static byte[] tooManyConnections(int maxConnections) {
        return simple("TooManyConnections", "the sidecar holds its maximum of " + maxConnections
                + " client connections; only sidecar routes are answered on this one", Boolean.TRUE);
    }

    /** The message of a 409 for {@code verdict}. */
    public static String conflictMessage(VersionConstraint.Verdict verdict, long current, long target) {
        return switch (verdict) {
            case NOT_READY -> "server is at version " + current + ", target " + target + " is not ready";
            case TOO_OLD -> "server is at version " + current + ", cannot roll back to " + target;
            case SATISFIED -> throw new IllegalArgumentException("a satisfied constraint is not a conflict");
        };
    }

    /** The error type of a 409 for {@code verdict}: {@code WeightVersionNotReady} or {@code WeightVersionTooOld}. */
    public static String conflictType(VersionConstraint.Verdict verdict) {
        return switch (verdict) {
            case NOT_READY -> "WeightVersionNotReady";
            case TOO_OLD -> "WeightVersionTooOld";
            case SATISFIED -> throw new IllegalArgumentException("a satisfied constraint is not a conflict");
        };
    }

    /**
     * 409 body: upstream v1's nested {@code error} object (plus {@code latest_version} and
     * {@code retryable}) followed by HEAD's top-level keys.
     *
     * @param verdict {@code NOT_READY} or {@code TOO_OLD}
     * @param current the version served
     * @param target  the version the constraint asked for
     * @param latest  the newest version the replica has seen on the board
     */
    public static byte[] versionConflict(VersionConstraint.Verdict verdict, long current, long target, long latest) {
        String type = conflictType(verdict);
        String message = conflictMessage(verdict, current, target);
        StringBuilder sb = new StringBuilder(320);
        sb.append("{\"error\":{\"type\":");
        CanonicalJson.appendString(sb, type);
        sb.append(",\"message\":");
        CanonicalJson.appendString(sb, message);
        sb.append(",\"current_version\":").append(current)
                .append(",\"target_version\":").append(target)
                .append(",\"latest_version\":").append(latest)
                .append(",\"retryable\":").append(verdict == VersionConstraint.Verdict.NOT_READY)
                .append("},\"type\":");
        CanonicalJson.appendString(sb, type);
        sb.append(",\"target_version\":").append(target)
                .append(",\"applied\":").append(current)
                .append(",\"message\":");
        CanonicalJson.appendString(sb, message);
        sb.append('}');
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] simple(String type, String message, Boolean retryable) {
        StringBuilder sb = new StringBuilder(96 + message.length());
        sb.append("{\"error\":{\"type\":");
        CanonicalJson.appendString(sb, type);
        sb.append(",\"message\":");
        CanonicalJson.appendString(sb, message);
        if (retryable != null) {
            sb.append(",\"retryable\":").append(retryable.booleanValue());
        }
        sb.append("}}");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }
}
