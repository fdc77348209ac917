package dev.stitch.publish;

/**
 * Receives the progress of a publisher's long phases, e.g. to print bytes/s and an ETA. Calls may
 * come from worker threads, concurrently; implementations must be thread-safe and quick.
 */
@FunctionalInterface
public interface PublishProgress {

    /** Reports nothing. */
    PublishProgress NONE = (version, phase, done, total) -> { };

    /**
     * @param version the version being published (0 while seeding)
     * @param phase   {@code seed} (copying the served checkpoint into the snapshot), {@code diff},
     *                {@code encode} (transition files), {@code anchor} (full checkpoint),
     *                {@code commit} (manifest and pointer), {@code done}
     * @param done    bytes done in this phase so far (cumulative)
     * @param total   bytes of this phase
     */
    void report(long version, String phase, long done, long total);
}
