package dev.stitch.engine;

import dev.stitch.sync.EngineAdapter;

/** Entry point of the SGLang adapters (docs/protocol/sync-and-engines.md §7.2 and 7.3). */
public final class SglangAdapters {

    private SglangAdapters() {
    }

    /**
     * The adapter for {@code mode}: {@code engine} (patched SGLang applies sparse deltas itself) or
     * {@code host} (stock SGLang reloads a local checkpoint the sidecar keeps current).
     */
    public static EngineAdapter create(String mode, SglangSettings settings) {
        return SglangAdapter.create(mode, settings);
    }
}
