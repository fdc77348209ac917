package dev.stitch.sync;

/**
 * States of the sync worker (docs/protocol/sync-and-engines.md §6.1); {@link #name()} is the exposed string.
 * {@link #WAITING_FOR_ARRIVAL} is ours: a remote board's pointer names a version whose files have not
 * arrived yet, and the worker retries with backoff while the engine keeps serving (§6.7).
 * {@link #WAITING_FOR_ROUTER} is ours too: the router denied the commit of a staged version for now (rolling
 * updates, docs/protocol/sidecar-http.md §5.2), and the worker asks again after the delay it named.
 */
public enum SyncState {
    IDLE, QUEUED, PREFETCHING, PREPARING, COMMITTING, WAITING_FOR_ARRIVAL, WAITING_FOR_ROUTER, ERROR
}
