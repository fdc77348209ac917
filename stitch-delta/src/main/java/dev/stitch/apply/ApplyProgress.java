package dev.stitch.apply;

/** Receives progress of a host-side apply (the CLI prints it when stderr is a terminal). */
@FunctionalInterface
public interface ApplyProgress {

    /** Reports nothing. */
    ApplyProgress NONE = (version, phase, done, total) -> { };

    /**
     * @param version the version being worked on
     * @param phase   {@code verify}, {@code decode}, {@code write}, {@code anchor}, {@code done}
     * @param done    bytes done in this phase
     * @param total   bytes of this phase
     */
    void report(long version, String phase, long done, long total);
}
