package dev.stitch.protocol;

/** The artifact kinds this implementation writes and understands (docs/protocol/board.md §1.3). */
public enum ArtifactKind {
    /** A delta payload; listed in {@code transition_files}. */
    TRANSITION("transition"),
    /** A file needed to interpret the transition that is not a payload (the disk_delta index). */
    TRANSITION_META("transition_meta"),
    /** A file of an anchor's complete checkpoint, under {@code full/}. */
    FULL("full");

    private final String wireName;

    ArtifactKind(String wireName) {
        this.wireName = wireName;
    }

    /** The {@code kind} string on the wire. */
    public String wireName() {
        return wireName;
    }

    /** The kind named {@code wireName}, or null for a kind this reader does not know (kept and ignored). */
    public static ArtifactKind fromWire(String wireName) {
        for (ArtifactKind k : values()) {
            if (k.wireName.equals(wireName)) {
                return k;
            }
        }
        return null;
    }
}
