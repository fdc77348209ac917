package dev.stitch.format.sparse;

/** Position encodings of slime v1 sparse_delta files (docs/formats/sparse-delta.md §2.4). */
public enum SparseEncoding {
    /** Each index as u32 LE. */
    INDICES("indices"),
    /** Gaps as u16 or u32 per param. */
    DELTAS("deltas"),
    /** {@link #DELTAS}, then the whole file as one zstd frame. */
    DELTAS_ZSTD("deltas_zstd");

    private final String id;

    SparseEncoding(String id) {
        this.id = id;
    }

    /** The metadata and manifest spelling. */
    public String id() {
        return id;
    }

    /** Parses the {@code encoding} metadata value; anything else is an error. */
    public static SparseEncoding parse(String id) {
        for (SparseEncoding e : values()) {
            if (e.id.equals(id)) {
                return e;
            }
        }
        throw new IllegalArgumentException("unknown sparse_delta encoding '" + id + "'");
    }

    @Override
    public String toString() {
        return id;
    }
}
