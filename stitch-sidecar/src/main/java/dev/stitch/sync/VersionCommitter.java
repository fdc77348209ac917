package dev.stitch.sync;

import dev.stitch.format.DeltaFormat;
import dev.stitch.apply.BoardTail;
import dev.stitch.apply.ChainPlan;
import dev.stitch.apply.ChainPlanner;
import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.VersionNotArrivedException;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sync worker's path from a board pointer to a flipped version (docs/protocol/sync-and-engines.md §6.3 steps 4-6,
 * 6.4): plan the chain with the {@link ChainPlanner}, verify every artifact it uses (falling back to the
 * anchor when the delta tail fails), stage it outside the gate, then close the gate, drain, commit with
 * retries, flip and persist. Runs on the worker thread only; {@link #engineConsistent} and
 * {@link #lastCommitAt} may be read from any thread.
 */
final class VersionCommitter {

    private static final Logger LOG = LoggerFactory.getLogger(VersionCommitter.class);

    private final SyncConfig config;
    private final SyncBoard board;
    private final EngineAdapter engine;
    private final AdmissionGate gate;
    private final SyncMetrics metrics;
    private final SidecarStateFile stateFile;
    private final Consumer<SyncState> states;
    private final BooleanSupplier awaitArrivals;
    private final CommitPermission permission;
    private final ChainPlanner planner;

    // Versions of refusedRun that the engine or host applier refused (6.5): never planned as deltas again.
    private final Set<Long> refusedVersions = new TreeSet<>();
    private String refusedRun;
    private volatile boolean engineConsistent = true;
    private volatile Double lastCommitAt;

    /**
     * @param states        receives the worker state as the protocol moves through PREPARING and COMMITTING
     * @param awaitArrivals whether a file of a version the pointer names that has not arrived yet is waited for
     *                      (its {@link VersionNotArrivedException} ends the pass) rather than treated as damage
     */
    VersionCommitter(SyncConfig config, SyncBoard board, EngineAdapter engine, AdmissionGate gate,
                     SyncMetrics metrics, SidecarStateFile stateFile, Consumer<SyncState> states,
                     BooleanSupplier awaitArrivals, CommitPermission permission) {
        this.permission = permission;
        this.config = config;
        this.board = board;
        this.engine = engine;
        this.gate = gate;
        this.metrics = metrics;
        this.stateFile = stateFile;
        this.states = states;
        this.awaitArrivals = awaitArrivals;
        this.planner = new ChainPlanner(config.maxReplayVersions());
    }

    /** False after a commit failed once the engine had started changing weights, until one succeeds. */
    boolean engineConsistent() {
        return engineConsistent;
    }

    /** Epoch seconds of the last flip, or null. */
    Double lastCommitAt() {
        return lastCommitAt;
    }

    // ---------------------------------------------------------------- planning and verification (6.3 steps 4-5)

    /**
     * Plans the chain from the served version (or the adapter's staging copy, see
     * {@link EngineAdapter#planFrom}) to the pointer and verifies every artifact it uses; a delta tail
     * that fails verification is replaced by its anchor alternative when there is one.
     */
    SyncPlan planAndVerify(SyncBoard.Pointer pointer, long served, Map<String, Object> m)
            throws IOException, SyncFailure {
        long t0 = System.nanoTime();
        long latest = pointer.version();
        long current = Math.min(engine.planFrom(served, pointer.runId(), latest), latest);
        if (current != served) {
            LOG.info("planning from version {} (the adapter's staging copy), the engine serves {}", current, served);
        }
        boolean reload = current != served;
        ChainPlanner.Copy copy = ChainPlanner.Copy.clean(pointer.runId(), current);
        VersionNotArrivedException[] late = new VersionNotArrivedException[1];
        BoardTail tail = BoardTail.read(planner, copy, pointer.runId(), latest, v -> {
            try {
                return board.readVersion(v);
            } catch (VersionNotArrivedException e) {
                late[0] = e;
                throw e;
            }
        });
        ChainPlan.Chain chain = switch (planner.plan(copy, pointer.runId(), tail)) {
            case ChainPlan.Chain c -> c;
            case ChainPlan.Refusal r when r.kind() == ChainPlan.Refusal.Kind.MISSING_VERSION && late[0] != null
                    && tail.missing().equals(OptionalLong.of(late[0].version())) && awaitArrivals.getAsBoolean()
                    -> throw late[0]; // the chain needs a version whose manifest is still on its way (6.7)
            case ChainPlan.Refusal r -> throw new SyncFailure(r.message());
            // the staging copy already holds the target: only the engine's reload remains
            case ChainPlan.UpToDate u -> new ChainPlan.Chain(current, latest, Optional.empty(), List.of(), null,
                    Optional.empty());
        };
        m.put("manifest_verify_s", SyncWorker.seconds(System.nanoTime() - t0));
        if (chain.reason() != null) {
            LOG.info("planning through anchor {}: {}", chain.anchor().map(VersionStep::version).orElse(0L),
                    chain.reason());
        }

        chain = avoidRefused(chain, pointer.runId());
        long v0 = System.nanoTime();
        SyncPlan chosen = SyncPlan.of(chain, pointer.runId(), reload);
        long bytes;
        try {
            bytes = verify(chosen);
        } catch (SyncFailure e) {
            if (chain.fallback().isEmpty()) {
                throw e;
            }
            ChainPlan.Chain viaAnchor = chain.fallback().get();
            LOG.warn("delta path {}..{} failed verification ({}); re-planning through anchor {}", current + 1,
                    latest, e.getMessage(), viaAnchor.anchor().map(VersionStep::version).orElse(0L));
            chosen = SyncPlan.of(viaAnchor, pointer.runId(), true);
            bytes = verify(chosen);
        }
        if (!refusedVersions.isEmpty()) {
            m.put("refused_versions", List.copyOf(refusedVersions));
        }
        requireNoRefused(chosen);
        chosen = chosen.withWeightsDigests(recordedDigests(chosen));
        double verifyS = SyncWorker.seconds(System.nanoTime() - v0);
        m.put("artifact_verify_s", verifyS);
        m.put("artifact_bytes_verified", bytes);
        m.put("target_version", chosen.target());
        m.put("tail_versions", chosen.versions().size());
        m.put("tail_transition_files", chosen.transitionFileCount());
        m.put("tail_weights", chosen.weightsKnown() ? List.copyOf(new TreeSet<>(chosen.touchedWeights()))
                : null);
        m.put("anchor_version", chosen.anchor().map(VersionStep::version).orElse(null));
        m.put("plan_kind", chosen.kind().label());
        LOG.info("plan {}: {} -> {} ({} version(s), {} transition file(s){}); verified {} bytes in {} s",
                chosen.kind().label(), current, chosen.target(), chosen.versions().size(),
                chosen.transitionFileCount(),
                chosen.anchor().map(a -> ", anchor " + a.version()).orElse(""), bytes, SyncWorker.fmt(verifyS));
        return chosen;
    }

    /** The {@code metadata.weights_digest} of every delta the plan replays, where its manifest records one. */
    private Map<Long, String> recordedDigests(SyncPlan plan) throws IOException {
        Map<Long, String> digests = new HashMap<>();
        for (VersionStep v : plan.deltas()) {
            board.weightsDigest(v.version()).ifPresent(d -> digests.put(v.version(), d));
        }
        return digests;
    }

    /** A delta chain through a refused version is replaced by its anchor alternative when there is one. */
    private ChainPlan.Chain avoidRefused(ChainPlan.Chain chain, String runId) {
        if (!java.util.Objects.equals(refusedRun, runId)) {
            refusedVersions.clear();
            refusedRun = runId;
        }
        Optional<Long> bad = firstRefused(chain.deltas());
        if (bad.isEmpty() || chain.fallback().isEmpty()) {
            return chain;
        }
        ChainPlan.Chain viaAnchor = chain.fallback().get();
        LOG.warn("version {} was refused before; re-planning through anchor {}", bad.get(),
                viaAnchor.anchor().map(VersionStep::version).orElse(0L));
        return viaAnchor;
    }

    private void requireNoRefused(SyncPlan plan) throws SyncFailure {
        Optional<Long> bad = firstRefused(plan.deltas());
        if (bad.isPresent()) {
            throw new SyncFailure("version " + bad.get() + " was refused (wrong base or checksum mismatch) and no anchor in "
                    + (plan.from() + 1) + ".." + plan.target() + " bypasses it; waiting for a newer anchor");
        }
    }

    private Optional<Long> firstRefused(List<VersionStep> deltas) {
        return deltas.stream().map(VersionStep::version).filter(refusedVersions::contains).findFirst();
    }

    /** The refusal behind {@code e}, if a version was refused rather than the apply failing for another reason. */
    private static Optional<RefusedVersionException> refusal(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof RefusedVersionException r) {
                return Optional.of(r);
            }
        }
        return Optional.empty();
    }

    /**
     * Step 5 (the planner already checked contiguity and runs): every version's backend is one the
     * adapter applies, and every artifact it uses matches its manifest; returns the bytes verified.
     */
    private long verify(SyncPlan plan) throws SyncFailure, VersionNotArrivedException {
        long bytes = 0;
        int unverified = 0;
        List<VersionStep> all = plan.versions();
        for (int i = 0; i < all.size(); i++) {
            VersionStep v = all.get(i);
            boolean isAnchorLoad = i == 0 && plan.anchor().isPresent();
            String backend = isAnchorLoad ? DeltaFormat.FULL.id() : v.backend();
            if (!engine.supports(backend) && !(isAnchorLoad && engine.supports(v.backend()))) {
                throw new SyncFailure("version " + v.version() + " needs backend '" + backend
                        + "', which the " + engine.mode() + "-mode adapter cannot apply");
            }
            try {
                SyncBoard.Verification result = board.verify(v, isAnchorLoad, config.requireChecksums());
                bytes += result.bytesVerified();
                unverified += result.unverifiedArtifacts();
            } catch (IOException e) {
                if (e instanceof VersionNotArrivedException late && awaitArrivals.getAsBoolean()) {
                    throw late; // waited for, not replaced by the anchor path: the file is on its way (6.7)
                }
                metrics.verifyFailure();
                throw new SyncFailure("version " + v.version() + " failed verification: " + e.getMessage());
            }
        }
        metrics.unverified(unverified);
        return bytes;
    }

    // ---------------------------------------------------------------- staging and commits (6.3 step 6, 6.4)

    /**
     * Stages {@code plan} outside the gate, then commits it inside. Returns false when a version of the
     * plan was refused (6.5): it is remembered, so that the next plan goes through an anchor instead of
     * retrying the same delta forever; the refusal is reported as {@code refused_versions}.
     */
    boolean stageAndCommit(SyncPlan plan, Map<String, Object> m) throws Exception {
        states.accept(SyncState.PREPARING);
        long s0 = System.nanoTime();
        Map<String, Object> stageDetail;
        try {
            stageDetail = engine.stage(plan);
        } catch (Exception e) {
            return remember(e, m);
        }
        double stageS = SyncWorker.seconds(System.nanoTime() - s0);
        metrics.stageDuration.observe(stageS);
        m.put("stage_s", stageS);
        m.put("stage_detail", stageDetail);
        LOG.info("staged {} plan {} -> {} in {} s", plan.kind().label(), plan.from(), plan.target(),
                SyncWorker.fmt(stageS));
        if (engineConsistent) {
            // Asked after staging, right before the gate closes, so that a grant is followed by the drain at
            // once; an engine in an unknown state is re-established without asking (sidecar-http.md §5.2).
            CommitPermission.Decision d = permission.ask(gate.currentVersion(), plan.target());
            if (d instanceof CommitPermission.Decision.Deferred deferred) {
                throw new CommitDeferredException(gate.currentVersion(), plan.target(), deferred.retryAfterMillis());
            }
        }
        try {
            commit(plan, m);
        } catch (Exception e) {
            return remember(e, m); // engine mode: the engine refused a delta load or its digest disagreed
        }
        return true;
    }

    /** Remembers the version {@code e} refused and returns false; rethrows any other failure. */
    private boolean remember(Exception e, Map<String, Object> m) throws Exception {
        Optional<RefusedVersionException> refused = refusal(e);
        if (refused.isEmpty()) {
            throw e;
        }
        refusedVersions.add(refused.get().version());
        metrics.refusedVersion();
        m.put("refused_versions", List.copyOf(refusedVersions));
        m.put("refusal", refused.get().getMessage());
        LOG.warn("{}; re-planning without it", refused.get().getMessage());
        return false;
    }

    /**
     * Brings an engine whose weights are unknown back to a named version (6.5): through the anchor of the
     * plan to {@code pointer} when it has one, because an anchor load replaces every weight; otherwise by
     * a reset to the base checkpoint, from which the next plan replays.
     */
    void reestablish(SyncBoard.Pointer pointer, Map<String, Object> m) throws Exception {
        String run = gate.currentRunId();
        if (Objects.equals(pointer.runId(), run) && pointer.version() > gate.currentVersion()) {
            try {
                SyncPlan plan = planAndVerify(pointer, gate.currentVersion(), m);
                if (plan.kind() == SyncPlan.Kind.ANCHOR) {
                    LOG.info("engine weights are in an unknown state: loading anchor {}",
                            plan.anchor().map(VersionStep::version).orElse(0L));
                    stageAndCommit(plan, m);
                    return;
                }
            } catch (SyncFailure e) {
                LOG.info("no anchor plan to re-establish the engine with ({}); resetting it instead", e.getMessage());
            }
        }
        LOG.info("engine weights are in an unknown state: reloading the base checkpoint, then replaying");
        resetTo(run, m);
    }

    /** Brings the engine back to the base checkpoint under run {@code runId} (a run switch, or unknown weights). */
    void resetTo(String runId, Map<String, Object> m) throws Exception {
        SyncPlan plan = SyncPlan.reset(runId, gate.currentVersion());
        states.accept(SyncState.PREPARING);
        long s0 = System.nanoTime();
        Map<String, Object> detail = engine.stageReset();
        double stageS = SyncWorker.seconds(System.nanoTime() - s0);
        metrics.stageDuration.observe(stageS);
        m.put("stage_s", stageS);
        m.put("stage_detail", detail);
        m.put("plan_kind", "reset");
        m.put("target_version", 0L);
        commit(plan, m);
    }

    private void commit(SyncPlan plan, Map<String, Object> m) throws Exception {
        boolean all = plan.kind() == SyncPlan.Kind.RESET || config.commitMode() == CommitMode.QUIESCE;
        boolean inPlace = !all;
        long g0 = System.nanoTime();
        gate.close(all ? AdmissionGate.State.CLOSED_ALL : AdmissionGate.State.CLOSED_EXACT);
        states.accept(SyncState.COMMITTING);
        int[] retriesUsed = {0};
        try {
            AdmissionGate.DrainOutcome drain = gate.drain(SyncWorker.secondsToNanos(config.drainTimeoutS()),
                    SyncWorker.secondsToNanos(config.abortGraceS()), p -> preempt(p, all));
            double drainS = SyncWorker.seconds(drain.waitNanos());
            metrics.drainWait.observe(drainS);
            metrics.preempted(drain.preempted().size());
            m.put("drain_wait_s", drainS);
            m.put("drain_preempted", drain.preempted().size());
            if (plan.kind() == SyncPlan.Kind.NOOP) {
                long c0 = System.nanoTime();
                engine.label(plan.target());
                m.put("commit_s", SyncWorker.seconds(System.nanoTime() - c0));
                m.put("commit_detail", Map.of("label", Long.toString(plan.target())));
                m.put("skipped_noop_reload", true);
                flip(plan);
            } else if (!inPlace) {
                long f0 = System.nanoTime();
                engine.flush();
                m.put("flush_s", SyncWorker.seconds(System.nanoTime() - f0));
                Map<String, Object> detail = commitWithRetries(plan, retriesUsed, m);
                m.put("commit_detail", detail);
                m.put("skipped_noop_reload", false);
                flip(plan);
            } else {
                long p0 = System.nanoTime();
                engine.pause("in_place");
                double pauseS = SyncWorker.seconds(System.nanoTime() - p0);
                m.put("pause_s", pauseS);
                long pausedAt = System.nanoTime();
                boolean failed = true;
                try {
                    Map<String, Object> detail = commitWithRetries(plan, retriesUsed, m);
                    m.put("commit_detail", detail);
                    m.put("skipped_noop_reload", false);
                    flip(plan);
                    failed = false;
                } finally {
                    if (failed && !engineConsistent) {
                        abortQuietly();
                    }
                    long r0 = System.nanoTime();
                    try {
                        engine.resume();
                    } finally {
                        m.put("resume_s", SyncWorker.seconds(System.nanoTime() - r0));
                        metrics.enginePause.observe(SyncWorker.seconds(System.nanoTime() - pausedAt) + pauseS);
                    }
                }
            }
        } finally {
            gate.reopen();
            // Steps a mode skips report 0 so that every pass exposes the same keys.
            for (String key : List.of("flush_s", "pause_s", "commit_s", "resume_s", "drain_wait_s")) {
                m.putIfAbsent(key, 0.0);
            }
            m.putIfAbsent("drain_preempted", 0);
            m.putIfAbsent("skipped_noop_reload", false);
            m.putIfAbsent("anchor_version", null);
            double gateS = SyncWorker.seconds(System.nanoTime() - g0);
            metrics.commitDuration.observe(gateS);
            m.put("gate_s", gateS);
            m.put("commit_retries_used", retriesUsed[0]);
        }
        LOG.info("committed {} {} -> {} (gate {} s, drain {} s, commit {} s)", plan.kind().label(), plan.from(),
                plan.target(), SyncWorker.fmt((Double) m.get("gate_s")), SyncWorker.fmt((Double) m.get("drain_wait_s")),
                SyncWorker.fmt((Double) m.getOrDefault("commit_s", 0.0)));
    }

    private Map<String, Object> commitWithRetries(SyncPlan plan, int[] retriesUsed, Map<String, Object> m)
            throws Exception {
        long c0 = System.nanoTime();
        Exception last = null;
        for (int attempt = 0; attempt <= config.commitRetries(); attempt++) {
            try {
                Map<String, Object> detail;
                if (plan.kind() == SyncPlan.Kind.RESET) {
                    engine.reset();
                    detail = Map.of();
                } else {
                    detail = engine.commit(plan);
                }
                m.put("commit_s", SyncWorker.seconds(System.nanoTime() - c0));
                retriesUsed[0] = attempt;
                if (!engineConsistent) {
                    engineConsistent = true;
                    gate.engineConsistent(true);
                    LOG.info("engine weights are in a known state again");
                }
                return detail;
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                last = e;
                retriesUsed[0] = attempt;
                LOG.warn("commit {} -> {} attempt {} failed: {}", plan.from(), plan.target(), attempt + 1,
                        e.getMessage());
                if (refusal(e).isPresent()) {
                    // the same delta would be refused again; the loads before it did change weights
                    m.put("commit_s", SyncWorker.seconds(System.nanoTime() - c0));
                    engineConsistent = false;
                    gate.engineConsistent(false);
                    throw e;
                }
            }
        }
        m.put("commit_s", SyncWorker.seconds(System.nanoTime() - c0));
        engineConsistent = false;
        gate.engineConsistent(false);
        throw new SyncFailure("commit " + plan.from() + " -> " + plan.target() + " failed after "
                + (config.commitRetries() + 1) + " attempt(s), engine weights unknown: "
                + (last == null ? "" : last.getMessage()));
    }

    private void abortQuietly() {
        try {
            engine.pause("abort");
        } catch (Exception e) {
            LOG.warn("aborting in-flight requests failed: {}", e.getMessage());
        }
    }

    private void preempt(List<AdmissionGate.Preempted> preempted, boolean quiesce) {
        boolean ridless = false;
        for (AdmissionGate.Preempted p : preempted) {
            if (p.rids().isEmpty()) {
                ridless = true;
            }
            for (String rid : p.rids()) {
                engine.abort(rid);
            }
        }
        if (!preempted.isEmpty()) {
            LOG.warn("drain timed out after {} s: preempted {} request(s)", config.drainTimeoutS(), preempted.size());
        }
        if (ridless && quiesce) {
            try {
                engine.pause("abort");
                engine.resume();
            } catch (Exception e) {
                LOG.warn("abort of rid-less requests failed: {}", e.getMessage());
            }
        }
    }

    private void flip(SyncPlan plan) {
        gate.flip(plan.runId(), plan.target());
        lastCommitAt = System.currentTimeMillis() / 1000.0;
        metrics.commit(plan.kind());
        long applied = 0;
        for (VersionStep pv : plan.deltas()) {
            applied += pv.transitionBytes();
        }
        if (plan.anchor().isPresent()) {
            applied += plan.anchor().get().fullBytes();
        }
        metrics.appliedBytes(applied);
        stateFile.write(plan.runId(), plan.target());
        board.applied(plan.target());
    }
}
