package dev.stitch.sync;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sync worker of board-and-sidecar.md 6: one thread that watches the board, plans and verifies
 * the tail, stages it outside the gate and commits it through the {@link AdmissionGate}.
 *
 * <p>Everything the request path calls ({@link #wake}, {@link #notReady}, {@link #status}) is
 * non-blocking and does no I/O; all board and engine I/O happens on the worker thread.
 */
public final class SyncWorker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SyncWorker.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String STATE_FILE = "sidecar_state.json";

    private final SyncConfig config;
    private final SyncBoard board;
    private final EngineAdapter engine;
    private final AdmissionGate gate;
    private final SyncMetrics metrics = new SyncMetrics();
    private final Thread thread;

    // Trigger state, guarded by triggerLock; never held across I/O.
    private final ReentrantLock triggerLock = new ReentrantLock();
    private final Condition triggered = triggerLock.newCondition();
    private boolean pending;
    private boolean rpcRefresh;
    private boolean running = true;
    private long nextPollNanos;
    private long nextProbeNanos;
    private long retryAtNanos;

    // Status, written by the worker only, read by the endpoints.
    private volatile SyncState state = SyncState.IDLE;
    private volatile String lastSyncError;
    private volatile boolean syncTaskActive;
    private volatile boolean ready;
    private volatile boolean engineConsistent = true;
    private volatile int consecutiveErrors;
    private volatile Double nextRetryAt;
    private volatile Double lastCommitAt;
    private volatile boolean engineReachable;
    private volatile String latestRunId;
    private volatile long latestSeen;
    private volatile long lastPointerReadNanos = Long.MIN_VALUE / 2;
    private volatile Long queuedTarget;
    private volatile long wanted;
    private volatile Map<String, Object> lastMetrics = Map.of();

    // Worker-only state.
    private boolean adoptRunOnFirstRead;
    private boolean prepared;
    private long lastRefreshNanos = Long.MIN_VALUE / 2;
    private SyncBoard.Pointer failedPointer;

    public SyncWorker(SyncConfig config, SyncBoard board, EngineAdapter engine, AdmissionGate gate) {
        this.config = config;
        this.board = board;
        this.engine = engine;
        this.gate = gate;
        this.thread = new Thread(this::runLoop, "stitch-sync");
        this.thread.setDaemon(true);
    }

    /** Starts the worker: prepare the engine, adopt the persisted state, run the startup pass. */
    public void start() {
        thread.start();
    }

    public AdmissionGate gate() {
        return gate;
    }

    public SyncMetrics metrics() {
        return metrics;
    }

    public String engineName() {
        return engine.name();
    }

    public String engineMode() {
        return engine.mode();
    }

    public String layout() {
        return board.layout();
    }

    public CommitMode commitMode() {
        return config.commitMode();
    }

    /**
     * Wakes the worker (6.2): records the hint, makes sure one more pass runs. {@code rpc} marks an
     * explicit wake that bypasses the refresh rate limit.
     */
    public void wake(OptionalLong hint, boolean rpc) {
        hint.ifPresent(this::recordWanted);
        triggerLock.lock();
        try {
            pending = true;
            rpcRefresh |= rpc;
            if (queuedTarget == null) {
                // Targets are clamped to the board's latest; the pass re-reads it before planning.
                long known = Math.max(latestSeen, gate.currentVersion());
                queuedTarget = hint.isPresent() ? Math.min(hint.getAsLong(), known) : known;
            }
            triggered.signalAll();
        } finally {
            triggerLock.unlock();
        }
    }

    /**
     * A 409 NotReady for {@code target}. Targets are clamped to the board's latest: a hint above the
     * latest version seen starts a pass at most once per poll interval, so an unpublished target never
     * causes a refresh loop.
     */
    public void notReady(long target) {
        recordWanted(target);
        if (target <= gate.currentVersion()) {
            return;
        }
        long pollNanos = secondsToNanos(config.pollIntervalS() > 0 ? config.pollIntervalS() : 5.0);
        if (target <= latestSeen || System.nanoTime() - lastPointerReadNanos >= pollNanos) {
            wake(OptionalLong.empty(), false);
        }
    }

    private void recordWanted(long hint) {
        synchronized (this) {
            if (hint > wanted) {
                wanted = hint;
            }
        }
    }

    /** The state for {@code /health}, {@code /server_info} and {@code /metrics}. */
    public SyncStatus status() {
        boolean isReady = ready && state != SyncState.ERROR && engineConsistent;
        String reason = null;
        if (!ready) {
            reason = "initial_sync_incomplete";
        } else if (!engineConsistent) {
            reason = "engine_state_unknown";
        } else if (state == SyncState.ERROR) {
            reason = "sync_error";
        }
        return new SyncStatus(gate.currentRunId(), gate.currentVersion(), latestRunId, latestSeen, queuedTarget,
                wanted, state, lastSyncError, syncTaskActive, isReady, reason, engineConsistent, consecutiveErrors,
                nextRetryAt, lastCommitAt, engineReachable, gate.state().label(), gate.activeRequests(),
                gate.inflightExactRequests(), gate.inflightExactVersions(), lastMetrics);
    }

    @Override
    public void close() {
        triggerLock.lock();
        try {
            running = false;
            triggered.signalAll();
        } finally {
            triggerLock.unlock();
        }
        thread.interrupt();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- worker thread

    private enum Trigger { STOP, WAKE, POLL, RETRY, PROBE }

    private void runLoop() {
        try {
            startup();
            while (true) {
                boolean[] rpc = new boolean[1];
                Trigger t = awaitTrigger(rpc);
                switch (t) {
                    case STOP -> {
                        return;
                    }
                    case PROBE -> engineReachable = engine.probe();
                    case RETRY -> runPass(true);
                    case WAKE, POLL -> {
                        boolean recentRead = System.nanoTime() - lastPointerReadNanos
                                < secondsToNanos(config.minRefreshIntervalS());
                        if (state == SyncState.ERROR && t == Trigger.WAKE && !rpc[0] && recentRead) {
                            LOG.debug("wake during backoff ignored: the pointer was read moments ago");
                        } else if (state == SyncState.ERROR && !pointerChangedSinceFailure(rpc[0])) {
                            LOG.debug("wake during backoff ignored: the board pointer is unchanged");
                        } else {
                            runPass(rpc[0]);
                        }
                    }
                    default -> throw new IllegalStateException(t.name());
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            LOG.error("sync worker died", e);
            state = SyncState.ERROR;
            lastSyncError = "sync worker died: " + e;
        }
    }

    private void startup() throws InterruptedException {
        long now = System.nanoTime();
        nextPollNanos = now + secondsToNanos(config.pollIntervalS());
        nextProbeNanos = now + secondsToNanos(config.engineProbeIntervalS());
        adoptStartupState();
        wake(OptionalLong.empty(), true);
    }

    private void adoptStartupState() {
        Optional<SavedState> saved = readSavedState();
        if (saved.isPresent()) {
            Optional<String> label;
            try {
                label = engine.weightVersionLabel();
            } catch (RuntimeException e) {
                label = Optional.empty();
            }
            if (label.isPresent() && label.get().equals(Long.toString(saved.get().version()))) {
                LOG.info("adopting saved state run={} version={} (engine reports weight_version {})",
                        saved.get().runId(), saved.get().version(), label.get());
                gate.adopt(saved.get().runId(), saved.get().version());
                return;
            }
            LOG.info("not adopting saved state run={} version={}: engine reports weight_version {}",
                    saved.get().runId(), saved.get().version(), label.orElse("(unreadable)"));
        }
        gate.adopt(config.bootRunId(), config.bootVersion());
        adoptRunOnFirstRead = config.bootRunId() == null && config.bootVersion() == 0;
        LOG.info("starting from boot state run={} version={}", config.bootRunId(), config.bootVersion());
    }

    private Trigger awaitTrigger(boolean[] rpc) throws InterruptedException {
        triggerLock.lock();
        try {
            while (true) {
                if (!running) {
                    return Trigger.STOP;
                }
                long now = System.nanoTime();
                boolean inError = state == SyncState.ERROR;
                if (inError && now - retryAtNanos >= 0) {
                    pending = false;
                    rpcRefresh = false;
                    return Trigger.RETRY;
                }
                if (pending) {
                    pending = false;
                    rpc[0] = rpcRefresh;
                    rpcRefresh = false;
                    if (!inError) {
                        state = SyncState.QUEUED;
                    }
                    return Trigger.WAKE;
                }
                boolean polling = config.pollIntervalS() > 0;
                if (polling && now - nextPollNanos >= 0) {
                    nextPollNanos = now + secondsToNanos(config.pollIntervalS());
                    if (!inError) {
                        state = SyncState.QUEUED;
                    }
                    return Trigger.POLL;
                }
                if (!inError && config.engineProbeIntervalS() > 0 && now - nextProbeNanos >= 0) {
                    nextProbeNanos = now + secondsToNanos(config.engineProbeIntervalS());
                    return Trigger.PROBE;
                }
                long wait = Long.MAX_VALUE;
                if (inError) {
                    wait = Math.min(wait, retryAtNanos - now);
                }
                if (polling) {
                    wait = Math.min(wait, nextPollNanos - now);
                }
                if (!inError && config.engineProbeIntervalS() > 0) {
                    wait = Math.min(wait, nextProbeNanos - now);
                }
                if (wait == Long.MAX_VALUE) {
                    triggered.await();
                } else {
                    triggered.awaitNanos(Math.max(wait, 1));
                }
            }
        } finally {
            triggerLock.unlock();
        }
    }

    /** During backoff a wake or poll only starts a pass when the pointer moved since the failed pass. */
    private boolean pointerChangedSinceFailure(boolean rpc) {
        try {
            maybeRefresh(rpc);
            SyncBoard.Pointer p = readPointer();
            boolean changed = !p.equals(failedPointer);
            if (changed) {
                LOG.info("board pointer moved to run={} version={} during backoff; retrying now", p.runId(),
                        p.version());
            }
            return changed;
        } catch (IOException e) {
            return false;
        }
    }

    private long maybeRefresh(boolean force) throws IOException {
        long now = System.nanoTime();
        if (force || now - lastRefreshNanos >= secondsToNanos(config.minRefreshIntervalS())) {
            lastRefreshNanos = now;
            board.refresh();
        }
        return System.nanoTime() - now;
    }

    private SyncBoard.Pointer readPointer() throws IOException {
        SyncBoard.Pointer p = board.readPointer();
        lastPointerReadNanos = System.nanoTime();
        latestSeen = p.version();
        latestRunId = p.runId();
        gate.latestSeen(p.version());
        return p;
    }

    /** One pass of 6.3, looping until caught up; failures end in ERROR with a backoff. */
    private void runPass(boolean rpc) {
        syncTaskActive = true;
        state = SyncState.PREFETCHING;
        long passStart = System.nanoTime();
        boolean didWork = false;
        SyncBoard.Pointer pointer = null;
        Map<String, Object> m = new LinkedHashMap<>();
        try {
            if (!prepared) {
                prepareEngine();
            }
            boolean force = rpc;
            while (true) {
                m = new LinkedHashMap<>();
                long t0 = System.nanoTime();
                maybeRefresh(force);
                force = false;
                pointer = readPointer();
                double refreshS = seconds(System.nanoTime() - t0);
                metrics.boardRefresh.observe(refreshS);
                m.put("board_refresh_s", refreshS);
                queuedTarget = pointer.version();

                if (adoptRunOnFirstRead) {
                    adoptRunOnFirstRead = false;
                    if (gate.currentVersion() == 0 && !Objects.equals(pointer.runId(), gate.currentRunId())) {
                        LOG.info("adopting run {} of the board at version 0 (the base is the same in every run)",
                                pointer.runId());
                        gate.adopt(pointer.runId(), 0);
                    }
                }
                if (!Objects.equals(pointer.runId(), gate.currentRunId())) {
                    LOG.info("run switch {} -> {}: resetting the engine to the base checkpoint",
                            gate.currentRunId(), pointer.runId());
                    resetTo(pointer.runId(), m);
                    didWork = true;
                    continue;
                }
                if (!engineConsistent) {
                    LOG.info("engine weights are in an unknown state: reloading the base checkpoint, then replaying");
                    resetTo(gate.currentRunId(), m);
                    didWork = true;
                    continue;
                }
                long current = gate.currentVersion();
                if (pointer.version() == current) {
                    break;
                }
                if (pointer.version() < current) {
                    throw new SyncFailure("pointer_rewind: board latest is " + pointer.version() + " (run "
                            + pointer.runId() + ") but this replica serves " + current + "; touching nothing");
                }
                SyncPlan plan = planAndVerify(pointer, current, m);
                state = SyncState.PREPARING;
                long s0 = System.nanoTime();
                Map<String, Object> stageDetail = engine.stage(plan);
                double stageS = seconds(System.nanoTime() - s0);
                metrics.stageDuration.observe(stageS);
                m.put("stage_s", stageS);
                m.put("stage_detail", stageDetail);
                LOG.info("staged {} plan {} -> {} in {} s", plan.kind().label(), plan.from(), plan.target(),
                        fmt(stageS));
                commit(plan, m);
                didWork = true;
                recordMetrics(m, null);
                state = SyncState.PREFETCHING;
            }
            consecutiveErrors = 0;
            nextRetryAt = null;
            failedPointer = null;
            lastSyncError = null;
            ready = true;
            metrics.pass(didWork ? "ok" : "noop");
            if (didWork) {
                LOG.info("caught up at version {} (run {}) in {} s", gate.currentVersion(), gate.currentRunId(),
                        fmt(seconds(System.nanoTime() - passStart)));
            }
            state = SyncState.IDLE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            state = SyncState.ERROR;
            lastSyncError = "interrupted";
        } catch (Exception e) {
            fail(e, pointer, m);
        } finally {
            syncTaskActive = false;
            queuedTarget = null;
            triggerLock.lock();
            try {
                nextPollNanos = System.nanoTime() + secondsToNanos(config.pollIntervalS());
            } finally {
                triggerLock.unlock();
            }
        }
    }

    private void prepareEngine() throws Exception {
        long deadline = System.nanoTime() + secondsToNanos(config.engineStartTimeoutS());
        while (!(engineReachable = engine.probe())) {
            if (System.nanoTime() - deadline >= 0) {
                throw new SyncFailure("engine did not answer /health with 200 within "
                        + config.engineStartTimeoutS() + " s");
            }
            Thread.sleep(200);
        }
        engine.prepare();
        prepared = true;
    }

    private void fail(Exception e, SyncBoard.Pointer pointer, Map<String, Object> m) {
        String message = e instanceof SyncFailure ? e.getMessage()
                : e.getClass().getSimpleName() + ": " + e.getMessage();
        int n = consecutiveErrors + 1;
        double d = Math.min(config.backoffMaxS(), config.backoffInitialS() * Math.pow(2, n - 1));
        double delay = d * (0.5 + 0.5 * ThreadLocalRandom.current().nextDouble());
        consecutiveErrors = n;
        lastSyncError = message;
        failedPointer = pointer;
        metrics.pass("error");
        recordMetrics(m, message);
        triggerLock.lock();
        try {
            retryAtNanos = System.nanoTime() + secondsToNanos(delay);
        } finally {
            triggerLock.unlock();
        }
        nextRetryAt = System.currentTimeMillis() / 1000.0 + delay;
        state = SyncState.ERROR;
        LOG.warn("sync pass failed ({} consecutive): {}; retrying in {} s", n, message, fmt(delay));
        if (!(e instanceof SyncFailure) && !(e instanceof IOException)) {
            LOG.debug("failure detail", e);
        }
    }

    private void recordMetrics(Map<String, Object> m, String error) {
        m.put("error", error);
        m.put("recorded_at", System.currentTimeMillis() / 1000.0);
        lastMetrics = Collections.unmodifiableMap(new LinkedHashMap<>(m));
    }

    // ---------------------------------------------------------------- planning (6.3 steps 4-5)

    private SyncPlan planAndVerify(SyncBoard.Pointer pointer, long current, Map<String, Object> m)
            throws IOException, SyncFailure {
        long t0 = System.nanoTime();
        long latest = pointer.version();
        long served = current;
        current = Math.min(engine.planFrom(served, pointer.runId(), latest), latest);
        if (current != served) {
            LOG.info("planning from version {} (the adapter's staging copy), the engine serves {}", current, served);
        }
        boolean reload = current != served;
        List<PlannedVersion> aboveAnchor = new ArrayList<>(); // anchor..latest, descending
        List<PlannedVersion> belowAnchor = new ArrayList<>(); // current+1..anchor-1, descending
        PlannedVersion anchor = null;
        boolean gapBelowAnchor = false;
        for (long v = latest; v > current; v--) {
            PlannedVersion pv;
            try {
                pv = board.readVersion(v);
            } catch (NoSuchFileException | ProtocolException e) {
                if (anchor == null) {
                    if (e instanceof ProtocolException) {
                        throw e;
                    }
                    throw new SyncFailure("version " + v + " has no manifest (missing or garbage-collected) and no"
                            + " anchor above it in " + (current + 1) + ".." + latest);
                }
                // A corrupt or refused (linked, 1.6) version below an anchor is skipped like a missing one.
                gapBelowAnchor = true;
                break;
            }
            if (pv.version() != v) {
                throw new SyncFailure("manifest of version " + v + " says version " + pv.version());
            }
            if (anchor == null) {
                aboveAnchor.add(pv);
                if (pv.anchor()) {
                    anchor = pv;
                    if (anchor.version() - current > config.maxReplayVersions()) {
                        break; // replay too long: the versions below are never needed
                    }
                }
            } else {
                belowAnchor.add(pv);
            }
        }
        List<PlannedVersion> ascendingAbove = reversed(aboveAnchor);
        double manifestS = seconds(System.nanoTime() - t0);
        m.put("manifest_verify_s", manifestS);

        SyncPlan deltaPlan = null;
        SyncPlan anchorPlan = null;
        if (anchor == null) {
            deltaPlan = buildPlan(pointer, current, Optional.empty(), ascendingAbove, reload);
        } else {
            List<PlannedVersion> all = new ArrayList<>(reversed(belowAnchor));
            all.addAll(ascendingAbove);
            long replayCount = anchor.version() - current;
            boolean replayable = !gapBelowAnchor && replayCount <= config.maxReplayVersions()
                    && all.size() >= replayCount;
            List<PlannedVersion> replay = replayable ? all.subList(0, (int) replayCount) : List.of();
            long replayBytes = 0;
            for (PlannedVersion pv : replay) {
                replayable &= !"full".equals(pv.backend());
                replayBytes += pv.transitionBytes();
            }
            replayable &= replayBytes <= anchor.fullBytes();
            if (replayable) {
                deltaPlan = buildPlan(pointer, current, Optional.empty(), all, reload);
            }
            anchorPlan = buildPlan(pointer, anchor.version() - 1, Optional.of(anchor),
                    ascendingAbove.subList(1, ascendingAbove.size()), true);
            anchorPlan = new SyncPlan(SyncPlan.Kind.ANCHOR, anchorPlan.runId(), current, anchorPlan.target(),
                    anchorPlan.anchor(), anchorPlan.deltas(), anchorPlan.touchedWeights(), anchorPlan.weightsKnown());
        }
        long v0 = System.nanoTime();
        SyncPlan chosen;
        long bytes;
        if (deltaPlan != null) {
            try {
                bytes = verify(deltaPlan, pointer);
                chosen = deltaPlan;
            } catch (IOException | SyncFailure e) {
                if (anchorPlan == null) {
                    throw e;
                }
                LOG.warn("delta path {}..{} failed verification ({}); re-planning through anchor {}", current + 1,
                        latest, e.getMessage(), anchor.version());
                bytes = verify(anchorPlan, pointer);
                chosen = anchorPlan;
            }
        } else {
            bytes = verify(anchorPlan, pointer);
            chosen = anchorPlan;
        }
        double verifyS = seconds(System.nanoTime() - v0);
        m.put("artifact_verify_s", verifyS);
        m.put("artifact_bytes_verified", bytes);
        m.put("target_version", chosen.target());
        m.put("tail_versions", chosen.versions().size());
        m.put("tail_transition_files", chosen.transitionFileCount());
        m.put("tail_weights", chosen.weightsKnown() ? List.copyOf(new TreeSet<>(chosen.touchedWeights()))
                : null);
        m.put("anchor_version", chosen.anchor().map(PlannedVersion::version).orElse(null));
        m.put("plan_kind", chosen.kind().label());
        LOG.info("plan {}: {} -> {} ({} version(s), {} transition file(s){}); verified {} bytes in {} s",
                chosen.kind().label(), current, chosen.target(), chosen.versions().size(),
                chosen.transitionFileCount(),
                chosen.anchor().map(a -> ", anchor " + a.version()).orElse(""), bytes, fmt(verifyS));
        return chosen;
    }

    private SyncPlan buildPlan(SyncBoard.Pointer pointer, long from, Optional<PlannedVersion> anchor,
                               List<PlannedVersion> deltas, boolean reload) {
        Set<String> touched = new LinkedHashSet<>();
        boolean known = true;
        boolean empty = anchor.isEmpty() && !reload;
        for (PlannedVersion pv : deltas) {
            if (pv.hasTransitionFiles()) {
                empty = false;
                if (pv.transitionWeights().isEmpty()) {
                    known = false;
                }
            }
            touched.addAll(pv.transitionWeights());
        }
        if (anchor.isPresent()) {
            known = false; // an anchor load replaces every tensor
        }
        SyncPlan.Kind kind = anchor.isPresent() ? SyncPlan.Kind.ANCHOR
                : empty ? SyncPlan.Kind.NOOP : SyncPlan.Kind.DELTA;
        return new SyncPlan(kind, pointer.runId(), from, pointer.version(), anchor, deltas,
                known ? touched : Set.of(), known);
    }

    /** Step 5: contiguity, run, backend, then every used artifact; returns the bytes verified. */
    private long verify(SyncPlan plan, SyncBoard.Pointer pointer) throws IOException, SyncFailure {
        long previous = plan.from();
        long bytes = 0;
        int unverified = 0;
        List<PlannedVersion> all = plan.versions();
        for (int i = 0; i < all.size(); i++) {
            PlannedVersion pv = all.get(i);
            boolean isAnchorLoad = i == 0 && plan.anchor().isPresent();
            if (!isAnchorLoad && pv.baseVersion() != previous) {
                throw new SyncFailure("version " + pv.version() + " has base_version " + pv.baseVersion()
                        + ", expected " + previous + " (the chain is not contiguous)");
            }
            if (pv.runId() != null && pointer.runId() != null && !pv.runId().equals(pointer.runId())) {
                throw new SyncFailure("version " + pv.version() + " belongs to run " + pv.runId()
                        + ", the board pointer to run " + pointer.runId());
            }
            String backend = isAnchorLoad ? "full" : pv.backend();
            if (!engine.supports(backend) && !(isAnchorLoad && engine.supports(pv.backend()))) {
                throw new SyncFailure("version " + pv.version() + " needs backend '" + backend
                        + "', which the " + engine.mode() + "-mode adapter cannot apply");
            }
            try {
                SyncBoard.Verification v = board.verify(pv, isAnchorLoad, config.requireChecksums());
                bytes += v.bytesVerified();
                unverified += v.unverifiedArtifacts();
            } catch (IOException e) {
                metrics.verifyFailure();
                throw new SyncFailure("version " + pv.version() + " failed verification: " + e.getMessage());
            }
            previous = pv.version();
        }
        metrics.unverified(unverified);
        return bytes;
    }

    // ---------------------------------------------------------------- commits (6.4)

    private void resetTo(String runId, Map<String, Object> m) throws Exception {
        SyncPlan plan = SyncPlan.reset(runId, gate.currentVersion());
        state = SyncState.PREPARING;
        long s0 = System.nanoTime();
        Map<String, Object> detail = engine.stageReset();
        double stageS = seconds(System.nanoTime() - s0);
        metrics.stageDuration.observe(stageS);
        m.put("stage_s", stageS);
        m.put("stage_detail", detail);
        m.put("plan_kind", "reset");
        m.put("target_version", 0L);
        commit(plan, m);
        recordMetrics(m, null);
        state = SyncState.PREFETCHING;
    }

    private void commit(SyncPlan plan, Map<String, Object> m) throws Exception {
        boolean all = plan.kind() == SyncPlan.Kind.RESET || config.commitMode() == CommitMode.QUIESCE;
        boolean inPlace = !all;
        long g0 = System.nanoTime();
        gate.close(all ? AdmissionGate.State.CLOSED_ALL : AdmissionGate.State.CLOSED_EXACT);
        state = SyncState.COMMITTING;
        int[] retriesUsed = {0};
        try {
            AdmissionGate.DrainOutcome drain = gate.drain(secondsToNanos(config.drainTimeoutS()),
                    secondsToNanos(config.abortGraceS()), p -> preempt(p, all));
            double drainS = seconds(drain.waitNanos());
            metrics.drainWait.observe(drainS);
            metrics.preempted(drain.preempted().size());
            m.put("drain_wait_s", drainS);
            m.put("drain_preempted", drain.preempted().size());
            if (plan.kind() == SyncPlan.Kind.NOOP) {
                long c0 = System.nanoTime();
                engine.label(plan.target());
                m.put("commit_s", seconds(System.nanoTime() - c0));
                m.put("commit_detail", Map.of("label", Long.toString(plan.target())));
                m.put("skipped_noop_reload", true);
                flip(plan);
            } else if (!inPlace) {
                long f0 = System.nanoTime();
                engine.flush();
                m.put("flush_s", seconds(System.nanoTime() - f0));
                Map<String, Object> detail = commitWithRetries(plan, retriesUsed, m);
                m.put("commit_detail", detail);
                m.put("skipped_noop_reload", false);
                flip(plan);
            } else {
                long p0 = System.nanoTime();
                engine.pause("in_place");
                double pauseS = seconds(System.nanoTime() - p0);
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
                        m.put("resume_s", seconds(System.nanoTime() - r0));
                        metrics.enginePause.observe(seconds(System.nanoTime() - pausedAt) + pauseS);
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
            double gateS = seconds(System.nanoTime() - g0);
            metrics.commitDuration.observe(gateS);
            m.put("gate_s", gateS);
            m.put("commit_retries_used", retriesUsed[0]);
        }
        LOG.info("committed {} {} -> {} (gate {} s, drain {} s, commit {} s)", plan.kind().label(), plan.from(),
                plan.target(), fmt((Double) m.get("gate_s")), fmt((Double) m.get("drain_wait_s")),
                fmt((Double) m.getOrDefault("commit_s", 0.0)));
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
                m.put("commit_s", seconds(System.nanoTime() - c0));
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
            }
        }
        m.put("commit_s", seconds(System.nanoTime() - c0));
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
        for (PlannedVersion pv : plan.deltas()) {
            applied += pv.transitionBytes();
        }
        if (plan.anchor().isPresent()) {
            applied += plan.anchor().get().fullBytes();
        }
        metrics.appliedBytes(applied);
        saveState(plan.runId(), plan.target());
    }

    // ---------------------------------------------------------------- persisted state (6.5)

    record SavedState(String runId, long version) {
    }

    private Optional<SavedState> readSavedState() {
        if (config.stateDir() == null) {
            return Optional.empty();
        }
        Path file = config.stateDir().resolve(STATE_FILE);
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        try {
            JsonNode n = JSON.readTree(file.toFile());
            if (!n.isObject() || !n.path("version").canConvertToLong()) {
                LOG.warn("ignoring malformed {}", file);
                return Optional.empty();
            }
            JsonNode run = n.get("run_id");
            return Optional.of(new SavedState(run == null || run.isNull() ? null : run.asText(),
                    n.get("version").asLong()));
        } catch (IOException e) {
            LOG.warn("ignoring unreadable {}: {}", file, e.getMessage());
            return Optional.empty();
        }
    }

    private void saveState(String runId, long version) {
        if (config.stateDir() == null) {
            return;
        }
        try {
            Files.createDirectories(config.stateDir());
            ObjectNode n = JSON.createObjectNode();
            n.put("run_id", runId);
            n.put("version", version);
            Path file = config.stateDir().resolve(STATE_FILE);
            Path tmp = config.stateDir().resolve("." + STATE_FILE + "." + Long.toHexString(System.nanoTime())
                    + ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(JSON.writeValueAsBytes(n)));
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            LOG.warn("could not persist sidecar state: {}", e.getMessage());
        }
    }

    // ---------------------------------------------------------------- helpers

    private static List<PlannedVersion> reversed(List<PlannedVersion> list) {
        List<PlannedVersion> r = new ArrayList<>(list);
        Collections.reverse(r);
        return r;
    }

    static long secondsToNanos(double s) {
        return (long) (s * 1e9);
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }

    private static String fmt(double s) {
        return String.format(Locale.ROOT, "%.3f", s);
    }

    /** A pass failure whose message is the whole story (no stack trace needed). */
    static final class SyncFailure extends Exception {
        private static final long serialVersionUID = 1L;

        SyncFailure(String message) {
            super(message);
        }
    }
}
