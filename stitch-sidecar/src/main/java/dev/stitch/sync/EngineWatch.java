package dev.stitch.sync;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine-identity rules of sync-and-engines.md 6.5: compares what the engine reports with what it
 * reported after the last pass, stops versioned admission the moment it stops answering or reports other
 * weights, and re-establishes what it serves before a pass catches up again. Runs on the worker thread;
 * {@link #reachable} and {@link #lost} may be read from any thread.
 */
final class EngineWatch {

    private static final Logger LOG = LoggerFactory.getLogger(EngineWatch.class);

    private final EngineAdapter engine;
    private final AdmissionGate gate;
    private final SyncMetrics metrics;
    private final VersionCommitter committer;

    private volatile boolean reachable;
    // Why the engine's weights are not known right now: engine_unreachable or engine_restarted, else null.
    private volatile String lost;

    // Worker-only state.
    private boolean prepared;
    private EngineReport baseline;
    private boolean reestablished;

    EngineWatch(EngineAdapter engine, AdmissionGate gate, SyncMetrics metrics, VersionCommitter committer) {
        this.engine = engine;
        this.gate = gate;
        this.metrics = metrics;
        this.committer = committer;
    }

    /** Whether the engine answered the last probe ({@code engine_reachable} in {@code /server_info}). */
    boolean reachable() {
        return reachable;
    }

    /** Records the outcome of a plain health probe (startup waits for the engine with these). */
    void reachable(boolean answered) {
        reachable = answered;
    }

    /** {@code engine_unreachable} or {@code engine_restarted} while the engine's weights are not known, else null. */
    String lost() {
        return lost;
    }

    /**
     * Startup state (6.5): takes over the state saved after the last flip only when the engine still
     * reports that version's label.
     *
     * @return whether the saved state was adopted into the gate
     */
    boolean adoptSaved(Optional<SidecarStateFile.Saved> saved) {
        if (saved.isEmpty()) {
            return false;
        }
        Optional<String> label;
        try {
            label = engine.weightVersionLabel();
        } catch (RuntimeException e) {
            label = Optional.empty();
        }
        SidecarStateFile.Saved s = saved.get();
        if (label.isPresent() && label.get().equals(Long.toString(s.version()))) {
            LOG.info("adopting saved state run={} version={} (engine reports weight_version {})", s.runId(),
                    s.version(), label.get());
            gate.adopt(s.runId(), s.version());
            return true;
        }
        LOG.info("not adopting saved state run={} version={}: engine reports weight_version {}", s.runId(),
                s.version(), label.orElse("(unreadable)"));
        return false;
    }

    /** Whether {@link #prepare} has run. */
    boolean prepared() {
        return prepared;
    }

    /**
     * Startup: waits for the engine to answer {@code GET /health} with 200, then lets the adapter prepare
     * it (docs/protocol/sync-and-engines.md §7.1).
     */
    void prepare(double startTimeoutS) throws Exception {
        long deadline = System.nanoTime() + SyncWorker.secondsToNanos(startTimeoutS);
        while (!(reachable = engine.probe())) {
            if (System.nanoTime() - deadline >= 0) {
                throw new SyncFailure("engine did not answer /health with 200 within " + startTimeoutS + " s");
            }
            Thread.sleep(200);
        }
        engine.prepare();
        prepared = true;
    }

    /**
     * One probe: an engine that does not answer, or that reports other weights than the last pass left it
     * with, stops versioned admission at once. Before {@link #prepare} only its health is recorded.
     *
     * @return true when the engine answers but what it serves must be re-established by a pass
     */
    boolean probe() {
        if (!prepared) {
            reachable = engine.probe(); // startup still waits for the engine in prepareEngine
            return false;
        }
        Optional<EngineReport> report = engine.report();
        reachable = report.isPresent();
        if (report.isEmpty()) {
            lose("engine_unreachable", "the engine does not answer GET /health or GET /model_info");
            return false;
        }
        if (lost == null) {
            String change = identityChange(report.get());
            if (change == null) {
                return false;
            }
            lose("engine_restarted", change);
        }
        return true;
    }

    /** Whether the next pass must find out what the engine serves before planning. */
    boolean mustReestablish() {
        return lost != null && !reestablished;
    }

    private void lose(String reason, String detail) {
        if (!reason.equals(lost)) {
            LOG.warn("{}: {}; versioned requests get 503 until the engine's weights are re-established", reason,
                    detail);
            metrics.engineLost();
        }
        lost = reason;
        reestablished = false;
        gate.engineConsistent(false);
    }

    /** How {@code now} differs from what the engine reported after the last pass, or null. */
    private String identityChange(EngineReport now) {
        if (baseline == null) {
            return null;
        }
        if (!Objects.equals(baseline.weightVersion(), now.weightVersion())) {
            return "the engine reports weight_version " + now.weightVersion() + " where the sidecar left "
                    + baseline.weightVersion() + " (it restarted or was reloaded by someone else)";
        }
        if (baseline.weightsDigest() != null && !baseline.weightsDigest().equals(now.weightsDigest())) {
            return "the engine reports weights " + now.weightsDigest() + " where the sidecar left "
                    + baseline.weightsDigest();
        }
        return null;
    }

    /**
     * Finds out what a lost engine serves now: the weights the sidecar left when it reports them
     * unchanged, else the version the adapter can name from its report (the base, or host mode's clean
     * local checkpoint), else a reset to the base. The gate then holds a true version again; admission
     * and readiness resume once the pass has caught up ({@link #caughtUp}).
     */
    void reestablish(Map<String, Object> m) throws Exception {
        EngineReport r = engine.report().orElseThrow(() -> new SyncFailure(
                "engine unreachable: GET /health or GET /model_info failed; versioned requests get 503"));
        reachable = true;
        String change = baseline == null ? "no report from before to compare with" : identityChange(r);
        String run = gate.currentRunId();
        if (change == null) {
            LOG.info("engine answers again and still serves version {} (weight_version {})", gate.currentVersion(),
                    r.weightVersion());
        } else {
            OptionalLong served = engine.servedAfterRestart(r, run);
            m.put("engine_reestablished", change);
            if (served.isPresent()) {
                LOG.warn("engine restarted ({}); it serves version {} of run {}: planning from there", change,
                        served.getAsLong(), run);
                gate.adopt(run, served.getAsLong());
                r = labelled(r, served.getAsLong());
            } else {
                LOG.warn("engine restarted ({}) and its report does not say which version it serves: resetting it "
                        + "to the base checkpoint", change);
                committer.resetTo(run, m);
                r = engine.report().orElse(null);
            }
        }
        baseline = r;
        reestablished = true;
    }

    /**
     * The engine's report once its label names {@code version}: a restarted engine keeps its boot label,
     * and responses are only stamped when the engine's own label agrees with the stamp (sidecar-http.md 4.5).
     */
    private EngineReport labelled(EngineReport r, long version) throws Exception {
        if (Long.toString(version).equals(r.weightVersion())) {
            return r;
        }
        engine.label(version);
        return engine.report().orElse(r);
    }

    /** A pass that committed something failed later: the engine's report becomes the baseline when it answers. */
    void rebase() {
        engine.report().ifPresent(r -> baseline = r);
    }

    /**
     * A pass caught up: the engine's report becomes the baseline that later probes compare with (after a
     * pass that changed weights, or when there is none yet), and a lost engine is admitted again.
     */
    void caughtUp(boolean changedWeights) {
        if (changedWeights || baseline == null) {
            baseline = engine.report().orElse(null);
        }
        if (lost != null) {
            LOG.info("engine re-established at version {} (run {}); admitting versioned requests again",
                    gate.currentVersion(), gate.currentRunId());
            lost = null;
            reestablished = false;
            gate.engineConsistent(committer.engineConsistent());
        }
    }
}
