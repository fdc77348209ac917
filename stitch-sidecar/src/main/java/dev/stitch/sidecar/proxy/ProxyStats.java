package dev.stitch.sidecar.proxy;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Data-plane counters (docs/protocol/sidecar-http.md §5, Prometheus metrics): requests by route and status,
 * rejections by error type, requests in flight and drain preemptions. The control plane's
 * {@code /metrics} appends them with {@link #appendPrometheus(StringBuilder)}.
 */
public final class ProxyStats {
    private record RouteCode(String route, int code) {
    }

    private final ConcurrentHashMap<RouteCode, LongAdder> requests = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, LongAdder> rejections = new ConcurrentHashMap<>();
    private final AtomicInteger active = new AtomicInteger();
    private final LongAdder preempted = new LongAdder();
    private final AtomicInteger openConnections = new AtomicInteger();
    private final ConcurrentHashMap<String, LongAdder> connectionsClosed = new ConcurrentHashMap<>();

    /** Counts one finished request; {@code route} is the metric label (see {@link ProxyServer}). */
    void request(String route, int code) {
        requests.computeIfAbsent(new RouteCode(route, code), k -> new LongAdder()).increment();
    }

    void rejection(String type) {
        rejections.computeIfAbsent(type, k -> new LongAdder()).increment();
    }

    void started() {
        active.incrementAndGet();
    }

    void finished() {
        active.decrementAndGet();
    }

    void preempted() {
        preempted.increment();
    }

    void openConnections(int n) {
        openConnections.set(n);
    }

    /** Counts a connection the proxy closed on its own: a timeout, an eviction at the cap or a refusal. */
    void connectionClosed(String reason) {
        connectionsClosed.computeIfAbsent(reason, k -> new LongAdder()).increment();
    }

    /** Client connections held right now, reserved ones included. */
    public int openConnections() {
        return openConnections.get();
    }

    /**
     * Connections the proxy closed for {@code reason}: {@code header_timeout}, {@code idle_timeout},
     * {@code evicted} (the longest-idle one, at the cap) or {@code refused} (beyond the reserved slice).
     */
    public long connectionsClosed(String reason) {
        LongAdder a = connectionsClosed.get(reason);
        return a == null ? 0 : a.sum();
    }

    /** Requests the proxy is handling right now (all routes, including those waiting at the gate). */
    public int activeRequests() {
        return active.get();
    }

    /** Requests counted so far with this route label and status code. */
    public long requests(String route, int code) {
        LongAdder a = requests.get(new RouteCode(route, code));
        return a == null ? 0 : a.sum();
    }

    /** Total requests finished so far, all routes and codes. */
    public long requestsTotal() {
        long n = 0;
        for (LongAdder a : requests.values()) {
            n += a.sum();
        }
        return n;
    }

    /** Rejections so far of one error type (e.g. {@code WeightVersionNotReady}). */
    public long rejections(String type) {
        LongAdder a = rejections.get(type);
        return a == null ? 0 : a.sum();
    }

    /** Requests preempted by a drain timeout. */
    public long drainPreempted() {
        return preempted.sum();
    }

    /**
     * Appends {@code stitch_requests_total}, {@code stitch_rejections_total},
     * {@code stitch_proxy_active_requests}, {@code stitch_drain_preempted_requests_total},
     * {@code stitch_proxy_open_connections} and {@code stitch_proxy_connections_closed_total} in
     * Prometheus text format 0.0.4, in a stable order.
     */
    public void appendPrometheus(StringBuilder out) {
        out.append("# HELP stitch_requests_total Requests answered by the proxy, by route and status code.\n");
        out.append("# TYPE stitch_requests_total counter\n");
        Map<String, Long> sorted = new TreeMap<>();
        requests.forEach((k, v) -> sorted.put("route=\"" + escape(k.route()) + "\",code=\"" + k.code() + "\"", v.sum()));
        sorted.forEach((labels, v) -> out.append("stitch_requests_total{").append(labels).append("} ").append(v).append('\n'));
        out.append("# HELP stitch_rejections_total Requests refused by the proxy, by error type.\n");
        out.append("# TYPE stitch_rejections_total counter\n");
        new TreeMap<>(rejections).forEach((type, v) ->
                out.append("stitch_rejections_total{type=\"").append(escape(type)).append("\"} ").append(v.sum()).append('\n'));
        out.append("# HELP stitch_proxy_active_requests Requests in flight through the proxy, all routes.\n");
        out.append("# TYPE stitch_proxy_active_requests gauge\n");
        out.append("stitch_proxy_active_requests ").append(active.get()).append('\n');
        out.append("# HELP stitch_drain_preempted_requests_total Requests aborted by a drain timeout.\n");
        out.append("# TYPE stitch_drain_preempted_requests_total counter\n");
        out.append("stitch_drain_preempted_requests_total ").append(preempted.sum()).append('\n');
        out.append("# HELP stitch_proxy_open_connections Client connections held by the proxy.\n");
        out.append("# TYPE stitch_proxy_open_connections gauge\n");
        out.append("stitch_proxy_open_connections ").append(openConnections.get()).append('\n');
        out.append("# HELP stitch_proxy_connections_closed_total Client connections closed by the proxy, by reason.\n");
        out.append("# TYPE stitch_proxy_connections_closed_total counter\n");
        new TreeMap<>(connectionsClosed).forEach((reason, v) -> out.append("stitch_proxy_connections_closed_total{reason=\"")
                .append(escape(reason)).append("\"} ").append(v.sum()).append('\n'));
    }

    private static String escape(String label) {
        return label.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
