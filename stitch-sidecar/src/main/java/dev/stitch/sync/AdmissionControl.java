package dev.stitch.sync;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * The request path's view of the admission gate (docs/protocol/sidecar-http.md §4.4, docs/protocol/sync-and-engines.md §6.4). Never blocks the
 * caller: when the gate is closed for a request the future completes when it reopens.
 */
public interface AdmissionControl {

    /**
     * Admits one versioned request.
     *
     * @param exact the exact version pinned by the request, if any (wins over {@code min})
     * @param min   the minimum version required, if any
     * @param rids  the request ids forwarded to the engine (used to abort on drain timeout); may be empty
     * @return completes with {@link Admission.Admitted} holding a lease, or {@link Admission.Rejected};
     *     cancelling the future (client gone while waiting) withdraws the request
     */
    CompletableFuture<Admission> admit(OptionalLong exact, OptionalLong min, List<String> rids);

    /** Number of admitted versioned requests whose leases are not yet released. */
    int activeRequests();
}
