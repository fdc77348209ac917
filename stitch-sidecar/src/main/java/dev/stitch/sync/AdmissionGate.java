package dev.stitch.sync;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The admission gate of docs/protocol/sync-and-engines.md §6.4: one lock guards the served version, the run, the
 * count of admitted versioned requests, the exact pins in flight and whether the gate is closed.
 *
 * <p>The request path calls {@link #admit}, which never blocks: a request the gate is closed for is
 * parked and its future completes when the gate reopens. The sync worker brackets every commit with
 * {@link #close}, {@link #drain}, {@link #flip} and {@link #reopen}. Futures are always completed after
 * the lock is released, on the thread that decided the outcome.
 */
public final class AdmissionGate implements AdmissionControl {

    /** Whether the gate admits requests. */
    public enum State {
        OPEN("open"),
        /** in_place commits: exact pins wait, other requests are admitted at the old version. */
        CLOSED_EXACT("closed_exact"),
        /** quiesce commits and resets: every versioned request waits. */
        CLOSED_ALL("closed_all");

        private final String label;

        State(String label) {
            this.label = label;
        }

        /** The spelling exposed in {@code /server_info.admission}. */
        public String label() {
            return label;
        }
    }

    /** A request still holding its lease when a drain ran out of time. */
    public record Preempted(List<String> rids, boolean exact, long startVersion) {
    }

    /** How a drain ended. */
    public record DrainOutcome(long waitNanos, List<Preempted> preempted) {
    }

    /** The drain did not complete within {@code drain_timeout_s + abort_grace_s}. */
    public static final class DrainTimeoutException extends Exception {
        private static final long serialVersionUID = 1L;

        DrainTimeoutException(String message) {
            super(message);
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Set<GateLease> inFlight = new LinkedHashSet<>();
    private final Map<Long, Integer> inflightExact = new TreeMap<>();
    private final List<Waiter> waiters = new ArrayList<>();

    private long currentVersion;
    private String currentRunId;
    private volatile long latestSeen;
    private State state = State.OPEN;
    private boolean engineConsistent = true;
    private int active;
    private int exactActive;
    /** Told after a change a router follows (docs/protocol/sidecar-http.md §5.1); never called with the lock held. */
    private volatile Runnable onChange = () -> { };

    public AdmissionGate(String runId, long version) {
        this.currentRunId = runId;
        this.currentVersion = version;
        this.latestSeen = version;
    }

    /**
     * Registers the listener told after the served version, the admission state or engine consistency
     * changes, and when the in-flight count of all requests or of one exact version crosses zero; it must
     * not block (the request path calls it).
     */
    public void onChange(Runnable listener) {
        this.onChange = listener;
    }

    @Override
    public CompletableFuture<Admission> admit(OptionalLong exact, OptionalLong min, List<String> rids) {
        CompletableFuture<Admission> future = new CompletableFuture<>();
        Waiter waiter = new Waiter(exact, min, List.copyOf(rids), future);
        Admission decided;
        lock.lock();
        try {
            if (blocks(waiter)) {
                waiters.add(waiter);
                decided = null;
            } else {
                decided = decide(waiter);
            }
        } finally {
            lock.unlock();
        }
        if (decided != null) {
            future.complete(decided);
            if (decided instanceof Admission.Admitted ad && ((GateLease) ad.lease()).crossedZero) {
                onChange.run();
            }
        } else {
            // A client that goes away while parked withdraws its request (the data plane answers 499).
            future.whenComplete((a, t) -> {
                if (future.isCancelled()) {
                    withdraw(waiter);
                }
            });
        }
        return future;
    }

    @Override
    public int activeRequests() {
        lock.lock();
        try {
            return active;
        } finally {
            lock.unlock();
        }
    }

    /** Admitted exact-pinned requests still in flight. */
    public int inflightExactRequests() {
        lock.lock();
        try {
            return exactActive;
        } finally {
            lock.unlock();
        }
    }

    /** In-flight exact pins by version, for {@code /server_info.inflight_exact_versions}. */
    public Map<Long, Integer> inflightExactVersions() {
        lock.lock();
        try {
            return new TreeMap<>(inflightExact);
        } finally {
            lock.unlock();
        }
    }

    /** Requests parked at the closed gate. */
    public int waitingRequests() {
        lock.lock();
        try {
            return waiters.size();
        } finally {
            lock.unlock();
        }
    }

    public long currentVersion() {
        lock.lock();
        try {
            return currentVersion;
        } finally {
            lock.unlock();
        }
    }

    public String currentRunId() {
        lock.lock();
        try {
            return currentRunId;
        } finally {
            lock.unlock();
        }
    }

    public State state() {
        lock.lock();
        try {
            return state;
        } finally {
            lock.unlock();
        }
    }

    public boolean engineConsistent() {
        lock.lock();
        try {
            return engineConsistent;
        } finally {
            lock.unlock();
        }
    }

    /** The newest version seen on the board (reported in 409 bodies); set by the sync worker. */
    public void latestSeen(long version) {
        latestSeen = version;
    }

    public long latestSeen() {
        return latestSeen;
    }

    /**
     * Marks the engine's weights known or unknown (6.5). While unknown every versioned request, parked
     * ones included once the gate reopens, is refused with {@link Admission.Reason#ENGINE_UNAVAILABLE}.
     */
    public void engineConsistent(boolean consistent) {
        List<Runnable> completions;
        lock.lock();
        try {
            engineConsistent = consistent;
            completions = consistent ? List.of() : releaseWaiters();
        } finally {
            lock.unlock();
        }
        completions.forEach(Runnable::run);
        onChange.run();
    }

    /**
     * Closes the gate before a commit; requests arriving from now on wait (all of them, or only exact
     * pins for {@link State#CLOSED_EXACT}).
     *
     * @throws IllegalStateException if the gate is already closed (commits are serialized on the worker)
     */
    public void close(State closedState) {
        if (closedState == State.OPEN) {
            throw new IllegalArgumentException("close() needs a closed state");
        }
        lock.lock();
        try {
            if (state != State.OPEN) {
                throw new IllegalStateException("gate is already " + state.label());
            }
            state = closedState;
        } finally {
            lock.unlock();
        }
        onChange.run();
    }

    /**
     * Waits until no admitted request blocks the commit: none at all for {@link State#CLOSED_ALL}, no
     * exact pin for {@link State#CLOSED_EXACT}. At {@code timeoutNanos} every still-blocking request is
     * preempted (its lease's preempt action runs and {@code preempter} receives the list, so the caller
     * can abort them on the engine); the drain then waits up to {@code graceNanos} more.
     *
     * @param timeoutNanos 0 = wait without bound
     * @throws DrainTimeoutException if requests are still in flight after the grace period
     */
    public DrainOutcome drain(long timeoutNanos, long graceNanos, Consumer<List<Preempted>> preempter)
            throws DrainTimeoutException, InterruptedException {
        long started = System.nanoTime();
        List<GateLease> toPreempt;
        lock.lock();
        try {
            if (state == State.OPEN) {
                throw new IllegalStateException("drain() needs a closed gate");
            }
            if (awaitDrained(timeoutNanos == 0 ? Long.MAX_VALUE : timeoutNanos)) {
                return new DrainOutcome(System.nanoTime() - started, List.of());
            }
            toPreempt = new ArrayList<>();
            for (GateLease l : inFlight) {
                if (blocksDrain(l)) {
                    toPreempt.add(l);
                }
            }
        } finally {
            lock.unlock();
        }
        List<Preempted> preempted = new ArrayList<>(toPreempt.size());
        for (GateLease l : toPreempt) {
            preempted.add(new Preempted(l.rids, l.exact, l.start));
            l.preempt();
        }
        preempter.accept(preempted);
        lock.lock();
        try {
            if (!awaitDrained(graceNanos)) {
                int blocking = 0;
                for (GateLease l : inFlight) {
                    if (blocksDrain(l)) {
                        blocking++;
                    }
                }
                throw new DrainTimeoutException(blocking + " request(s) still in flight "
                        + TimeUnit.NANOSECONDS.toMillis(graceNanos) + " ms after being preempted");
            }
        } finally {
            lock.unlock();
        }
        return new DrainOutcome(System.nanoTime() - started, List.copyOf(preempted));
    }

    /**
     * Moves the served version (and, on a reset, the run) while the gate is closed; leases released
     * from now on report {@code version} as their end.
     */
    public void flip(String runId, long version) {
        lock.lock();
        try {
            if (state == State.OPEN) {
                throw new IllegalStateException("flip() needs a closed gate");
            }
            currentRunId = runId;
            currentVersion = version;
        } finally {
            lock.unlock();
        }
        onChange.run();
    }

    /** Adopts a served state without a commit (startup adoption); only while nothing is admitted. */
    public void adopt(String runId, long version) {
        lock.lock();
        try {
            currentRunId = runId;
            currentVersion = version;
        } finally {
            lock.unlock();
        }
        onChange.run();
    }

    /** Opens the gate and decides every parked request against the (possibly new) version. */
    public void reopen() {
        List<Runnable> completions;
        lock.lock();
        try {
            state = State.OPEN;
            completions = releaseWaiters();
        } finally {
            lock.unlock();
        }
        completions.forEach(Runnable::run);
        onChange.run();
    }

    // ---- internals; everything below runs with the lock held unless stated otherwise ----

    private boolean awaitDrained(long nanos) throws InterruptedException {
        long remaining = nanos;
        while (!drained()) {
            if (remaining <= 0) {
                return false;
            }
            remaining = changed.awaitNanos(remaining);
        }
        return true;
    }

    private boolean drained() {
        return state == State.CLOSED_EXACT ? exactActive == 0 : active == 0;
    }

    private boolean blocksDrain(GateLease l) {
        return state != State.CLOSED_EXACT || l.exact;
    }

    private boolean blocks(Waiter w) {
        return state == State.CLOSED_ALL || (state == State.CLOSED_EXACT && w.exact.isPresent());
    }

    private List<Runnable> releaseWaiters() {
        List<Runnable> completions = new ArrayList<>();
        List<Waiter> still = new ArrayList<>();
        for (Waiter w : waiters) {
            if (w.future.isDone()) {
                continue;
            }
            if (engineConsistent && blocks(w)) {
                still.add(w);
                continue;
            }
            Admission a = decide(w);
            completions.add(() -> {
                if (!w.future.complete(a) && a instanceof Admission.Admitted ad) {
                    // Withdrawn between the decision and the completion: give the lease back.
                    ad.lease().release();
                }
            });
        }
        waiters.clear();
        waiters.addAll(still);
        return completions;
    }

    private Admission decide(Waiter w) {
        if (!engineConsistent) {
            return new Admission.Rejected(Admission.Reason.ENGINE_UNAVAILABLE, currentVersion, -1, latestSeen);
        }
        long current = currentVersion;
        if (w.exact.isPresent()) {
            long e = w.exact.getAsLong();
            if (current < e) {
                return new Admission.Rejected(Admission.Reason.NOT_READY, current, e, latestSeen);
            }
            if (current > e) {
                return new Admission.Rejected(Admission.Reason.TOO_OLD, current, e, latestSeen);
            }
        } else if (w.min.isPresent() && current < w.min.getAsLong()) {
            return new Admission.Rejected(Admission.Reason.NOT_READY, current, w.min.getAsLong(), latestSeen);
        }
        GateLease lease = new GateLease(current, currentRunId, w.exact.isPresent(), w.rids);
        lease.crossedZero = active == 0 || (lease.exact && !inflightExact.containsKey(current));
        active++;
        if (lease.exact) {
            exactActive++;
            inflightExact.merge(current, 1, Integer::sum);
        }
        inFlight.add(lease);
        return new Admission.Admitted(lease);
    }

    private void withdraw(Waiter w) {
        lock.lock();
        try {
            waiters.remove(w);
        } finally {
            lock.unlock();
        }
    }

    private long releaseLease(GateLease l) {
        long end;
        boolean crossedZero = false;
        lock.lock();
        try {
            end = currentVersion;
            if (inFlight.remove(l)) {
                active--;
                crossedZero = active == 0;
                if (l.exact) {
                    exactActive--;
                    inflightExact.computeIfPresent(l.start, (k, n) -> n == 1 ? null : n - 1);
                    crossedZero |= !inflightExact.containsKey(l.start);
                }
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
        if (crossedZero) {
            onChange.run();
        }
        return end;
    }

    private record Waiter(OptionalLong exact, OptionalLong min, List<String> rids,
                          CompletableFuture<Admission> future) {
    }

    private final class GateLease implements Lease {
        final long start;
        final String runId;
        final boolean exact;
        final List<String> rids;
        private final AtomicBoolean released = new AtomicBoolean();
        private final AtomicBoolean preempted = new AtomicBoolean();
        private final AtomicBoolean preemptRan = new AtomicBoolean();
        private volatile Runnable preemptAction;
        private volatile long end = -1;
        /** Set under the gate lock at admission: the first request in flight overall or of its exact version. */
        boolean crossedZero;

        GateLease(long start, String runId, boolean exact, List<String> rids) {
            this.start = start;
            this.runId = runId;
            this.exact = exact;
            this.rids = rids;
        }

        @Override
        public long startVersion() {
            return start;
        }

        @Override
        public String runId() {
            return runId;
        }

        @Override
        public long release() {
            if (released.compareAndSet(false, true)) {
                end = releaseLease(this);
            }
            while (end < 0) {
                Thread.onSpinWait(); // a concurrent first release is still computing the end version
            }
            return end;
        }

        @Override
        public void onPreempt(Runnable action) {
            preemptAction = action;
            if (preempted.get()) {
                runPreemptAction();
            }
        }

        void preempt() {
            preempted.set(true);
            runPreemptAction();
        }

        private void runPreemptAction() {
            Runnable action = preemptAction;
            if (action != null && preemptRan.compareAndSet(false, true)) {
                action.run();
            }
        }
    }
}
