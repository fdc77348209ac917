package dev.stitch.router;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** The router's counters in Prometheus text format 0.0.4 (docs/protocol/router.md §5). */
public final class RouterMetrics {
    final LongAdder routed = new LongAdder();
    final LongAdder rerouted = new LongAdder();
    final LongAdder affinityKept = new LongAdder();
    final LongAdder affinityBroken = new LongAdder();
    final LongAdder waited = new LongAdder();
    final LongAdder cut = new LongAdder();
    private final Map<String, LongAdder> rejected = new ConcurrentHashMap<>();

    void routed(AffinityOutcome affinity) {
        routed.increment();
        switch (affinity) {
            case KEPT -> affinityKept.increment();
            case BROKEN -> affinityBroken.increment();
            case NONE -> { }
        }
    }

    void rejected(int status, String reason) {
        rejected.computeIfAbsent(status + " " + reason, k -> new LongAdder()).increment();
    }

    void rerouted() {
        rerouted.increment();
    }

    void waited() {
        waited.increment();
    }

    void cut() {
        cut.increment();
    }

    /** Count of requests answered at the router with {@code status} and {@code reason}. */
    public long rejections(int status, String reason) {
        LongAdder a = rejected.get(status + " " + reason);
        return a == null ? 0 : a.sum();
    }

    public long routedTotal() {
        return routed.sum();
    }

    public long reroutedTotal() {
        return rerouted.sum();
    }

    public String exposition() {
        StringBuilder sb = new StringBuilder(512);
        sb.append("# HELP stitch_router_routed_total Requests forwarded to a replica.\n")
                .append("# TYPE stitch_router_routed_total counter\n")
                .append("stitch_router_routed_total ").append(routed.sum()).append('\n')
                .append("# HELP stitch_router_rejected_total Requests answered at the router, by status and reason.\n")
                .append("# TYPE stitch_router_rejected_total counter\n");
        for (Map.Entry<String, LongAdder> e : new TreeMap<>(rejected).entrySet()) {
            int space = e.getKey().indexOf(' ');
            sb.append("stitch_router_rejected_total{status=\"").append(e.getKey(), 0, space)
                    .append("\",reason=\"").append(e.getKey().substring(space + 1)).append("\"} ")
                    .append(e.getValue().sum()).append('\n');
        }
        sb.append("# HELP stitch_router_rerouted_total Requests sent to a second replica after the first refused or failed.\n")
                .append("# TYPE stitch_router_rerouted_total counter\n")
                .append("stitch_router_rerouted_total ").append(rerouted.sum()).append('\n')
                .append("# HELP stitch_router_affinity_total Requests with a session key whose replica was kept or changed.\n")
                .append("# TYPE stitch_router_affinity_total counter\n")
                .append("stitch_router_affinity_total{outcome=\"kept\"} ").append(affinityKept.sum()).append('\n')
                .append("stitch_router_affinity_total{outcome=\"broken\"} ").append(affinityBroken.sum()).append('\n')
                .append("# HELP stitch_router_catch_up_waits_total Requests that waited for a replica catching up to their version.\n")
                .append("# TYPE stitch_router_catch_up_waits_total counter\n")
                .append("stitch_router_catch_up_waits_total ").append(waited.sum()).append('\n')
                .append("# HELP stitch_router_relays_cut_total Relayed responses cut because their unreachable replica went silent.\n")
                .append("# TYPE stitch_router_relays_cut_total counter\n")
                .append("stitch_router_relays_cut_total ").append(cut.sum()).append('\n');
        return sb.toString();
    }
}
