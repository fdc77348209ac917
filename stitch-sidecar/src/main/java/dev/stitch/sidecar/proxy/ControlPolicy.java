package dev.stitch.sidecar.proxy;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Who may call the control routes that change something ({@code /wake},
 * {@code /rpc_sync_from_bulletin_board}) and how often (security.md, "Control routes").
 *
 * @param token            the bearer token those routes require, or null to leave them open
 * @param refreshPerSecond sustained rate of refresh-triggering calls; 0 turns the rate limit off
 * @param refreshBurst     calls allowed at once before the rate applies
 */
public record ControlPolicy(String token, double refreshPerSecond, int refreshBurst) {

    public ControlPolicy {
        if (token != null && token.isEmpty()) {
            throw new IllegalArgumentException("the control token must not be empty");
        }
        if (!(refreshPerSecond >= 0) || Double.isInfinite(refreshPerSecond)) {
            throw new IllegalArgumentException("refresh rate must be a non-negative number, got " + refreshPerSecond);
        }
        if (refreshBurst <= 0) {
            throw new IllegalArgumentException("refresh burst must be positive, got " + refreshBurst);
        }
    }

    /** Defaults of cli-and-config.md 8: no token, 5 refresh calls per second with a burst of 10. */
    public static ControlPolicy defaults() {
        return new ControlPolicy(null, 5.0, 10);
    }

    public ControlPolicy withToken(String newToken) {
        return new ControlPolicy(newToken, refreshPerSecond, refreshBurst);
    }

    /** Whether {@code presented} is the token, compared in time independent of where they differ. */
    boolean tokenMatches(String presented) {
        if (token == null) {
            return true;
        }
        if (presented == null) {
            return false;
        }
        // Comparing fixed-length digests also hides the token's length from a timing observer.
        return MessageDigest.isEqual(sha256(token), sha256(presented));
    }

    @Override
    public String toString() {
        return "ControlPolicy[token=" + (token == null ? "none" : "set") + ", refreshPerSecond=" + refreshPerSecond
                + ", refreshBurst=" + refreshBurst + "]";
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
