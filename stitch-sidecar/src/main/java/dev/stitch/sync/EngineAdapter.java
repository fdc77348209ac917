package dev.stitch.sync;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

/**
 * What the sync worker needs from the inference engine (docs/protocol/sync-and-engines.md §7.1). Every call runs on
 * the worker thread, never on the request path; a failure is an exception whose message ends up in
 * {@code last_sync_error}. Calls that return a map report timings and details surfaced as
 * {@code stage_detail}/{@code commit_detail}.
 */
public interface EngineAdapter extends AutoCloseable {

    /** Adapter name shown as {@code /server_info.backend}. */
    String name();

    /** {@code engine} or {@code host}. */
    String mode();

    /** Startup work before the first pass (materialize the local checkpoint, probe the receiver). */
    void prepare() throws Exception;

    /** The manifest backends this adapter can apply. */
    Set<String> supportedBackends();

    default boolean supports(String backend) {
        return supportedBackends().contains(backend);
    }

    /**
     * The version a plan towards {@code latest} must start from. The engine's served version unless
     * the adapter stages from its own copy: host mode starts from the local checkpoint's version, or
     * from 0 when that copy must be rebuilt (interrupted apply, reboot, other run, newer than latest).
     */
    default long planFrom(long served, String runId, long latest) throws java.io.IOException {
        return served;
    }

    /** Slow preparation outside the gate; must not change what the engine serves. */
    Map<String, Object> stage(SyncPlan plan) throws Exception;

    /** Brings the engine from {@code plan.from()} to {@code plan.target()} inside the gate. */
    Map<String, Object> commit(SyncPlan plan) throws Exception;

    /** Sets the engine's version label without reloading anything (empty-tail no-op). */
    void label(long version) throws Exception;

    /** Best-effort cache flush before a quiesce commit. */
    void flush();

    /** Pauses generation; {@code mode} is {@code in_place}, {@code abort} or {@code retract}. */
    void pause(String mode) throws Exception;

    /** Continues generation after {@link #pause}. */
    void resume() throws Exception;

    /** Staging work of a reset (e.g. rebuilding a local checkpoint from the base), outside the gate. */
    default Map<String, Object> stageReset() throws Exception {
        return Map.of();
    }

    /** Makes the engine serve the base checkpoint (version 0) again. */
    void reset() throws Exception;

    /** Best-effort abort of one request by rid. */
    void abort(String rid);

    /** {@code GET /health} of the engine: true when it answers 200. */
    boolean probe();

    /** The engine's current weight label from {@code /model_info}, if it can be read (restart adoption). */
    Optional<String> weightVersionLabel();

    /**
     * Health and identity in one probe (6.5): empty when the engine does not answer {@code GET /health}
     * with 200 or its {@code /model_info} cannot be read.
     */
    Optional<EngineReport> report();

    /**
     * The version of run {@code runId} the engine demonstrably serves after it restarted and reported
     * {@code report}, or empty when that cannot be told from what it reports (the worker then resets it to
     * the base). Never a guess: a delta is only ever applied onto weights the sidecar can name.
     */
    default OptionalLong servedAfterRestart(EngineReport report, String runId) throws java.io.IOException {
        return OptionalLong.empty();
    }

    /** Releases the adapter's connections; the engine itself keeps running. */
    @Override
    default void close() {
    }
}
