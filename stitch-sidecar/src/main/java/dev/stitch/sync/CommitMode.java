package dev.stitch.sync;

/** How a commit shares the engine with live traffic (docs/protocol/sync-and-engines.md §6.4). */
public enum CommitMode {
    /** Close the gate for everything, drain, flush, reload: safe on any engine. */
    QUIESCE("quiesce"),
    /** Only exact pins drain; the engine is paused in place while the weights change. */
    IN_PLACE("in_place");

    private final String label;

    CommitMode(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    /** Parses {@code quiesce} or {@code in_place}. */
    public static CommitMode parse(String text) {
        for (CommitMode m : values()) {
            if (m.label.equals(text)) {
                return m;
            }
        }
        throw new IllegalArgumentException("commit mode must be quiesce or in_place, not '" + text + "'");
    }
}
