package dev.stitch.encode;

import java.util.Locale;

/**
 * What a delta carries for each changed element: the new bits ({@code overwrite}, idempotent) or
 * {@code new XOR old} ({@code xor}, compresses better but needs the exact base).
 */
public enum ValueMode {
    XOR("xor"),
    OVERWRITE("overwrite");

    private final String id;

    ValueMode(String id) {
        this.id = id;
    }

    /** The spelling in manifests, indexes and on the command line. */
    public String id() {
        return id;
    }

    /** Parses {@code xor} or {@code overwrite} (case-insensitive). */
    public static ValueMode parse(String text) {
        for (ValueMode m : values()) {
            if (m.id.equals(text.toLowerCase(Locale.ROOT))) {
                return m;
            }
        }
        throw new IllegalArgumentException("unknown value mode '" + text + "' (expected xor or overwrite)");
    }

    @Override
    public String toString() {
        return id;
    }
}
