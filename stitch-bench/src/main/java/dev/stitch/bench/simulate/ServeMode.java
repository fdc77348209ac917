package dev.stitch.bench.simulate;

import dev.stitch.format.DeltaFormat;

/**
 * How the rollout host's engine takes a new version, the {@code mode} of a simulation row.
 */
enum ServeMode {
    /** Stock SGLang: the host applier patches a local checkpoint, then one full reload (docs/protocol/sync-and-engines.md §7.3). */
    HOST("host"),
    /** Patched SGLang: the engine applies the delta to its weights in place (docs/protocol/sync-and-engines.md §7.2). */
    ENGINE("engine");

    private final String label;

    ServeMode(String label) {
        this.label = label;
    }

    String label() {
        return label;
    }

    /**
     * Whether a patched engine applies {@code backend} in place: its receiver reads only slime v1
     * {@code sparse_delta} files (docs/formats/sparse-delta.md §2.9); a full checkpoint is a reload in either mode.
     */
    static boolean engineAppliesInPlace(String backend) {
        return DeltaFormat.SPARSE_DELTA.id().equals(backend);
    }
}
