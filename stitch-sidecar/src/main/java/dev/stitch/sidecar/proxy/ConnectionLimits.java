package dev.stitch.sidecar.proxy;

import java.time.Duration;
import java.util.Objects;

/**
 * Bounds on client connections of the data plane (security.md, "Limits"): how long a request head
 * may take, how long a keep-alive connection may sit idle, and how many connections are held.
 *
 * @param headerTimeout  a connection must deliver a complete request head this soon after it opens,
 *                       or after the first byte of a later request; otherwise it is closed (slowloris)
 * @param idleTimeout    a keep-alive connection with no request in progress is closed after this long;
 *                       it also bounds the gap between two reads of a request body
 * @param maxConnections client connections served normally; at the cap a new connection closes the
 *                       longest-idle one, and when every held connection is busy it lands in a small
 *                       reserved slice ({@link #reservedConnections()}) that answers only sidecar routes
 */
public record ConnectionLimits(Duration headerTimeout, Duration idleTimeout, int maxConnections) {

    public ConnectionLimits {
        Objects.requireNonNull(headerTimeout, "headerTimeout");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
        if (headerTimeout.isNegative() || headerTimeout.isZero()) {
            throw new IllegalArgumentException("header timeout must be positive, got " + headerTimeout);
        }
        if (idleTimeout.isNegative() || idleTimeout.isZero()) {
            throw new IllegalArgumentException("idle timeout must be positive, got " + idleTimeout);
        }
        if (maxConnections <= 0) {
            throw new IllegalArgumentException("max connections must be positive, got " + maxConnections);
        }
    }

    /** Defaults of cli-and-config.md 8: 10 s header timeout, 75 s idle timeout, 8192 connections. */
    public static ConnectionLimits defaults() {
        return new ConnectionLimits(Duration.ofSeconds(10), Duration.ofSeconds(75), 8192);
    }

    /**
     * Connections accepted beyond the cap while every held connection is busy: enough for probes and
     * operators to reach {@code /health} and {@code /metrics}, few enough to cost nothing.
     */
    public int reservedConnections() {
        return Math.max(8, maxConnections / 32);
    }
}
