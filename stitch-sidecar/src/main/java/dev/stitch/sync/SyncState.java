package dev.stitch.sync;

/** States of the sync worker (docs/protocol/sync-and-engines.md §6.1); {@link #name()} is the exposed string. */
public enum SyncState {
    IDLE, QUEUED, PREFETCHING, PREPARING, COMMITTING, ERROR
}
