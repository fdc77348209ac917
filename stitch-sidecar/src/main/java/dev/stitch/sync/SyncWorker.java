package dev.stitch.sync;

import dev.stitch.board.VersionNotArrivedException;
import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sync worker of docs/protocol/sync-and-engines.md §6: one thread that waits for wakes, polls, retries and
 * probes, watches the board pointer, and runs passes that hand each new version to the
 * {@link VersionCommitter} (plan, verify, stage, commit through the {@link AdmissionGate}).
 *
 * <p>Everything the request path calls ({@link #wake}, {@link #notReady}, {@link #status}) is
 * non-blocking and does no I/O; all board and engine I/O happens on the worker thread.
 */
public final class SyncWorker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SyncWorker.class);

    private final SyncConfig config;
    private final SyncBoard board;
    private final EngineAdapter engine;
    private final AdmissionGate gate;
    private final SyncMetrics metrics = new SyncMetrics();
    private final SidecarStateFile stateFile;
    private final VersionCommitter committer;
    private final EngineWatch watch;
    private final ArrivalWait arrival;
    private final Thread thread;
    private final CommitPermission permission;
    /** Told after a change of what {@link #status} reports that a router follows (sidecar-http.md §5.1). */
    private volatile Runnable onChange = () -> { };

    // Trigger state, guarded by triggerLock; never held across I/O.
    private final ReentrantLock triggerLock = new ReentrantLock();
    private final Condition triggered = triggerLock.newCondition();
    private boolean pending;
    private boolean rpcRefresh;
    private boolean probeNow;
    private boolean running = true;
    private long nextPollNanos;
    private long nextProbeNanos;
    private long retryAtNanos;

    // Status, written by the worker only, read by the endpoints.
    private volatile SyncState state = SyncState.IDLE;
    private volatile String lastSyncError;
    private volatile boolean syncTaskActive;
    private volatile boolean ready;
    private volatile int consecutiveErrors;
    private volatile Double nextRetryAt;
    private volatile String latestRunId;
    private volatile long latestSeen;
    private volatile long lastPointerReadNanos = Long.MIN_VALUE / 2;
    private volatile Long queuedTarget;
    private volatile long wanted;
    private volatile Map<String, Object> lastMetrics = Map.of();

    // Worker-only state.
    private boolean adoptRunOnFirstRead;
    private long lastRefreshNanos = Long.MIN_VALUE / 2;
    private SyncBoard.Pointer failedPointer;

    public SyncWorker(SyncConfig config, SyncBoard board, EngineAdapter engine, AdmissionGate gate) {
        this(config, board, engine, gate, CommitPermission.ALWAYS);
    }

    /**
     * @param permission asked before each commit of a newer version closes the gate (the router's rolling
     *                   update, docs/protocol/sidecar-http.md §5.2); not before the initial catch-up, which
     *                   no router routes to yet
     */
    public SyncWorker(SyncConfig config, SyncBoard board, EngineAdapter engine, AdmissionGate gate,
                      CommitPermission permission) {
        this.config = config;
        this.permission = permission;
        this.board = board;
        this.engine = engine;
        this.gate = gate;
        this.stateFile = new SidecarStateFile(config.stateDir());
        this.arrival = new ArrivalWait(config.arrivalTimeoutS(), metrics);
        this.committer = new VersionCommitter(config, board, engine, gate, metrics, stateFile, this::setState,
                arrival::patient, (from, to) -> ready ? permission.ask(from, to) : CommitPermission.GRANTED);
        this.watch = new EngineWatch(engine, gate, metrics, committer);
        this.thread = new Thread(this::runLoop, "stitch-sync");
        this.thread.setDaemon(true);
    }

    /** Starts the worker: prepare the engine, adopt the persisted state, run the startup pass. */
    public void start() {
        thread.start();
    }

    /**
     * Registers the listener told after the state, readiness or the newest version seen changes, and
     * after every gate change (see {@link AdmissionGate#onChange}); it must not block.
     */
    public void onChange(Runnable listener) {
        this.onChange = listener;
        gate.onChange(listener);
    }

    public CommitPermission commitPermission() {
        return permission;
    }

    private void setState(SyncState s) {
        if (state != s) {
            state = s;
            onChange.run();
        }
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

    /**
     * The data plane saw the engine answer with a weight label the sidecar did not commit for the
     * admitted version (sidecar-http.md 4.5): the engine is probed at once rather than at the next
     * {@code engine_probe_interval_s}, so that a restart between two probes turns readiness 503 promptly.
     * Non-blocking; calls before the probe runs coalesce into one.
     */
    public void engineSuspect(String detail) {
        triggerLock.lock();
        try {
            if (!probeNow) {
                probeNow = true;
                LOG.warn("probing the engine now: {}", detail);
            }
            triggered.signalAll();
        } finally {
            triggerLock.unlock();
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
        String lost = watch.lost();
        boolean engineConsistent = committer.engineConsistent() && lost == null;
        boolean isReady = ready && state != SyncState.ERROR && engineConsistent;
        String reason = null;
        if (!ready) {
            reason = "initial_sync_incomplete";
        } else if (lost != null) {
            reason = lost;
        } else if (!engineConsistent) {
            reason = "engine_state_unknown";
        } else if (state == SyncState.ERROR) {
            reason = "sync_error";
        }
        return new SyncStatus(gate.currentRunId(), gate.currentVersion(), latestRunId, latestSeen, queuedTarget,
                wanted, state, lastSyncError, syncTaskActive, isReady, reason, engineConsistent, consecutiveErrors,
                nextRetryAt, committer.lastCommitAt(), watch.reachable(), gate.state().label(), gate.activeRequests(),
                gate.inflightExactRequests(), gate.inflightExactVersions(), lastMetrics,
                arrival.status(System.nanoTime()));
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
                    case PROBE -> probeEngine();
                    case RETRY -> runPass(true);
                    case WAKE, POLL -> {
                        boolean recentRead = System.nanoTime() - lastPointerReadNanos
                                < secondsToNanos(config.minRefreshIntervalS());
                        if (backingOff() && t == Trigger.WAKE && !rpc[0] && recentRead) {
                            LOG.debug("wake during backoff ignored: the pointer was read moments ago");
                        } else if (backingOff() && !pointerChangedSinceFailure(rpc[0])) {
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
            setState(SyncState.ERROR);
            lastSyncError = "sync worker died: " + e;
        }
    }

    private void startup() throws InterruptedException {
        long now = System.nanoTime();
        nextPollNanos = now + pollDelayNanos();
        nextProbeNanos = now + secondsToNanos(config.engineProbeIntervalS());
        adoptStartupState();
        wake(OptionalLong.empty(), true);
    }

    private void adoptStartupState() {
        if (watch.adoptSaved(stateFile.read())) {
            return;
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
                if (probeNow) {
                    probeNow = false;
                    nextProbeNanos = now + secondsToNanos(config.engineProbeIntervalS());
                    return Trigger.PROBE;
                }
                boolean inError = backingOff();
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
                        setState(SyncState.QUEUED);
                    }
                    return Trigger.WAKE;
                }
                boolean polling = config.pollIntervalS() > 0;
                if (polling && now - nextPollNanos >= 0) {
                    nextPollNanos = now + pollDelayNanos();
                    if (!inError) {
                        setState(SyncState.QUEUED);
                    }
                    return Trigger.POLL;
                }
                if (config.engineProbeIntervalS() > 0 && now - nextProbeNanos >= 0) {
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
                if (config.engineProbeIntervalS() > 0) {
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

    /**
     * The periodic (or data-plane requested) probe of 6.5; once a lost engine answers again a pass
     * re-establishes what it serves before anything is admitted.
     */
    private void probeEngine() {
        boolean lost = watch.probe();
        onChange.run(); // the probe may have turned readiness either way
        if (lost && !backingOff()) {
            runPass(false); // while backing off, the retry re-establishes
        }
    }

    /** In ERROR, or waiting for a version's files to arrive: the next pass comes from the backoff timer (6.5, 6.7). */
    private boolean backingOff() {
        SyncState s = state;
        return s == SyncState.ERROR || s == SyncState.WAITING_FOR_ARRIVAL || s == SyncState.WAITING_FOR_ROUTER;
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
        boolean moved = latestSeen != p.version() || !Objects.equals(latestRunId, p.runId());
        latestSeen = p.version();
        latestRunId = p.runId();
        gate.latestSeen(p.version());
        if (moved) {
            onChange.run();
        }
        return p;
    }

    /** One pass of 6.3, looping until caught up; failures end in ERROR with a backoff. */
    private void runPass(boolean rpc) {
        syncTaskActive = true;
        setState(SyncState.PREFETCHING);
        long passStart = System.nanoTime();
        boolean didWork = false;
        SyncBoard.Pointer pointer = null;
        Map<String, Object> m = new LinkedHashMap<>();
        try {
            if (!watch.prepared()) {
                watch.prepare(config.engineStartTimeoutS());
            }
            if (watch.mustReestablish()) {
                watch.reestablish(m);
                didWork = true;
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
                    committer.resetTo(pointer.runId(), m);
                    recordMetrics(m, null);
                    setState(SyncState.PREFETCHING);
                    didWork = true;
                    continue;
                }
                if (!committer.engineConsistent()) {
                    committer.reestablish(pointer, m);
                    recordMetrics(m, null);
                    setState(SyncState.PREFETCHING);
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
                SyncPlan plan = committer.planAndVerify(pointer, current, m);
                if (!committer.stageAndCommit(plan, m)) {
                    recordMetrics(m, (String) m.get("refusal"));
                    setState(SyncState.PREFETCHING);
                    continue; // re-plan at once around the refused version
                }
                didWork = true;
                recordMetrics(m, null);
                setState(SyncState.PREFETCHING);
            }
            watch.caughtUp(didWork);
            consecutiveErrors = 0;
            nextRetryAt = null;
            failedPointer = null;
            lastSyncError = null;
            arrival.arrived();
            if (!ready) {
                ready = true;
                onChange.run();
            }
            metrics.pass(didWork ? SyncMetrics.PassOutcome.OK : SyncMetrics.PassOutcome.NOOP);
            if (didWork) {
                LOG.info("caught up at version {} (run {}) in {} s", gate.currentVersion(), gate.currentRunId(),
                        fmt(seconds(System.nanoTime() - passStart)));
            }
            setState(SyncState.IDLE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            setState(SyncState.ERROR);
            lastSyncError = "interrupted";
        } catch (Exception e) {
            if (didWork) {
                watch.rebase(); // what the failed pass did commit is what later probes compare with
            }
            Optional<VersionNotArrivedException> late = ArrivalWait.cause(e);
            if (e instanceof CommitDeferredException deferred) {
                failedPointer = pointer; // a moved pointer asks the router again at once
                retryAfterMillis(deferred.retryAfterMillis());
                LOG.info("{}; serving {} meanwhile", deferred.getMessage(), gate.currentVersion());
                setState(SyncState.WAITING_FOR_ROUTER);
            } else if (late.isPresent() && arrival.keepWaiting(late.get(), didWork)) {
                failedPointer = pointer; // as after a failure, a moved pointer ends the backoff early
                retryAfter(arrival.retries());
                setState(SyncState.WAITING_FOR_ARRIVAL);
            } else {
                fail(late.isPresent() ? arrival.timedOut(late.get()) : e, pointer, m);
            }
        } finally {
            syncTaskActive = false;
            queuedTarget = null;
            triggerLock.lock();
            try {
                nextPollNanos = System.nanoTime() + pollDelayNanos();
            } finally {
                triggerLock.unlock();
            }
        }
    }

    private void fail(Exception e, SyncBoard.Pointer pointer, Map<String, Object> m) {
        String message = e instanceof SyncFailure ? e.getMessage()
                : e.getClass().getSimpleName() + ": " + e.getMessage();
        int n = consecutiveErrors + 1;
        double delay = retryAfter(n);
        consecutiveErrors = n;
        lastSyncError = message;
        failedPointer = pointer;
        metrics.pass(SyncMetrics.PassOutcome.ERROR);
        recordMetrics(m, message);
        setState(SyncState.ERROR);
        LOG.warn("sync pass failed ({} consecutive): {}; retrying in {} s", n, message, fmt(delay));
        if (!(e instanceof SyncFailure) && !(e instanceof IOException)) {
            LOG.debug("failure detail", e);
        }
    }

    /** Schedules the backoff retry after the {@code n}-th consecutive failed or waiting pass (6.5); returns its delay. */
    private double retryAfter(int n) {
        double d = Math.min(config.backoffMaxS(), config.backoffInitialS() * Math.pow(2, n - 1));
        double delay = d * (0.5 + 0.5 * ThreadLocalRandom.current().nextDouble());
        triggerLock.lock();
        try {
            retryAtNanos = System.nanoTime() + secondsToNanos(delay);
        } finally {
            triggerLock.unlock();
        }
        nextRetryAt = System.currentTimeMillis() / 1000.0 + delay;
        return delay;
    }

    /** Schedules the retry the router asked for (sidecar-http.md §5.2); denials do not count as errors. */
    private void retryAfterMillis(long millis) {
        triggerLock.lock();
        try {
            retryAtNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        } finally {
            triggerLock.unlock();
        }
        nextRetryAt = (System.currentTimeMillis() + millis) / 1000.0;
    }

    private void recordMetrics(Map<String, Object> m, String error) {
        m.put("error", error);
        m.put("recorded_at", System.currentTimeMillis() / 1000.0);
        lastMetrics = Collections.unmodifiableMap(new LinkedHashMap<>(m));
    }

    // ---------------------------------------------------------------- helpers

    static long secondsToNanos(double s) {
        return (long) (s * 1e9);
    }

    static double seconds(long nanos) {
        return nanos / 1e9;
    }

    static String fmt(double s) {
        return String.format(Locale.ROOT, "%.3f", s);
    }

    /**
     * The poll interval with ±10% jitter, so that a fleet started together does not read the pointer in
     * lockstep (docs/protocol/board.md §7.5).
     */
    private long pollDelayNanos() {
        double jitter = 0.9 + 0.2 * java.util.concurrent.ThreadLocalRandom.current().nextDouble();
        return secondsToNanos(config.pollIntervalS() * jitter);
    }

    /** What the remote board fetched, when the board is remote. */
    public java.util.Optional<dev.stitch.board.FetchStats> fetchStats() {
        return board.fetchStats();
    }
}
