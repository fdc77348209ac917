package dev.stitch.publish;

import java.util.Locale;

/** The artifact family of a version (board-and-sidecar.md 1.4), as the publisher can write it. */
public enum Backend {
    /** This project's compact format, applied host-side. */
    STITCH_DELTA("stitch_delta"),
    /** slime v1 files, applied by a patched SGLang (engine mode) or host-side. */
    SPARSE_DELTA("sparse_delta"),
    /** slime v2 per-tensor xor/overwrite files, applied host-side. */
    DISK_DELTA("disk_delta"),
    /** A full-only version: a complete checkpoint under {@code full/}, no transition. */
    FULL("full");

    private final String id;

    Backend(String id) {
        this.id = id;
    }

    /** The manifest spelling. */
    public String id() {
        return id;
    }

    /** Parses a manifest or command-line spelling ({@code stitch_delta}; dashes accepted). */
    public static Backend parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        for (Backend b : values()) {
            if (b.id.equals(t)) {
                return b;
            }
        }
        throw new IllegalArgumentException("unknown backend '" + text
                + "' (expected stitch_delta, sparse_delta, disk_delta or full)");
    }

    @Override
    public String toString() {
        return id;
    }
}
