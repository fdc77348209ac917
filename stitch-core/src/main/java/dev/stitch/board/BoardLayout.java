package dev.stitch.board;

import java.util.Locale;

/** How a board directory is organised (docs/protocol/board.md §1 and 3). */
public enum BoardLayout {
    /** Ours: {@code latest.json} and {@code versions/weight_vNNNNNN/manifest.json}; read-write. */
    STITCH,
    /** Upstream v1 {@code layout="slime"}: text pointer {@code latest}, {@code <run>/weight_vNNNNNN/}; read-only. */
    SLIME,
    /** Upstream HEAD: one run directory, text pointer {@code latest}, {@code updates/weight_vNNNNNN/}; read-only. */
    HEAD;

    /** The lowercase name used by {@code --layout} and {@code /server_info}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses {@code stitch}, {@code slime} or {@code head}, case-insensitively. */
    public static BoardLayout parse(String label) {
        for (BoardLayout l : values()) {
            if (l.name().equalsIgnoreCase(label.trim())) {
                return l;
            }
        }
        throw new IllegalArgumentException("unknown board layout '" + label + "' (expected stitch, slime or head)");
    }
}
