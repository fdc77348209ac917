package dev.stitch.sidecar.control;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The sequence number and long-poll waiters of the state stream (docs/protocol/sidecar-http.md §5.1).
 *
 * <p>Whatever may have changed the replica's state calls {@link #poke}, which never blocks: it schedules one
 * re-read of the state on this class's own thread (pokes arriving meanwhile coalesce into it). The re-read
 * compares the state's {@code change key} with the last one; when it differs the sequence number moves on and
 * every waiter is answered. A change of the {@code load key} alone is answered too, but at most once per
 * {@code loadIntervalMillis}: load moves with every request, and a router that heard of each move would spend
 * more on listening than on routing. Waiters that see no change are answered by a timer. Nothing polls.
 *
 * @param <S> the state snapshot
 */
public final class StateChangeNotifier<S> implements AutoCloseable {

    /** One numbered state. */
    public record Numbered<S>(long seq, S state) {
    }

    private final Supplier<S> read;
    private final Function<S, Object> changeKey;
    private final Function<S, Object> loadKey;
    private final long loadIntervalNanos;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean rereadScheduled = new AtomicBoolean();
    private final List<Waiter<S>> waiters = new ArrayList<>();
    private Numbered<S> current;
    private Object currentKey;
    private Object currentLoadKey;
    private long publishedNanos;
    private boolean loadRereadScheduled;

    /**
     * A notifier where every change counts at once.
     *
     * @param read      takes a snapshot; must not wait for I/O
     * @param changeKey what of a snapshot counts as a change (equal keys: no new sequence number)
     */
    public StateChangeNotifier(Supplier<S> read, Function<S, Object> changeKey) {
        this(read, changeKey, s -> Boolean.TRUE, 0);
    }

    /**
     * @param read               takes a snapshot; must not wait for I/O
     * @param changeKey          what of a snapshot counts as a change, answered at once
     * @param loadKey            what of a snapshot counts as a load change, answered at most once per interval
     * @param loadIntervalMillis the shortest time between two answers caused by load changes alone
     */
    public StateChangeNotifier(Supplier<S> read, Function<S, Object> changeKey, Function<S, Object> loadKey,
                               long loadIntervalMillis) {
        this.read = read;
        this.changeKey = changeKey;
        this.loadKey = loadKey;
        this.loadIntervalNanos = TimeUnit.MILLISECONDS.toNanos(loadIntervalMillis);
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
            Thread th = new Thread(r, "stitch-state-stream");
            th.setDaemon(true);
            return th;
        });
        t.setRemoveOnCancelPolicy(true);
        this.thread = t;
        S first = read.get();
        // Numbering starts at the wall clock's milliseconds, so that a restarted sidecar's numbers exceed what
        // a router saw before the restart and its first long poll returns at once (sidecar-http.md §5.1).
        this.current = new Numbered<>(System.currentTimeMillis(), first);
        this.currentKey = changeKey.apply(first);
        this.currentLoadKey = loadKey.apply(first);
        this.publishedNanos = System.nanoTime();
    }

    /** Something may have changed: re-read the state soon. Non-blocking, safe from any thread. */
    public void poke() {
        if (rereadScheduled.compareAndSet(false, true)) {
            try {
                thread.execute(this::reread);
            } catch (RejectedExecutionException e) {
                rereadScheduled.set(false); // closed
            }
        }
    }

    /**
     * The current state once its sequence number exceeds {@code after}: at once if it already does, else
     * on the next change or, failing one, after {@code timeoutMillis} (the same state then).
     */
    public CompletableFuture<Numbered<S>> await(long after, long timeoutMillis) {
        CompletableFuture<Numbered<S>> answer = new CompletableFuture<>();
        Waiter<S> w = new Waiter<>(answer);
        synchronized (this) {
            if (current.seq() > after || timeoutMillis <= 0) {
                return CompletableFuture.completedFuture(current);
            }
            waiters.add(w);
        }
        try {
            var timer = thread.schedule(() -> timedOut(w), timeoutMillis, TimeUnit.MILLISECONDS);
            answer.whenComplete((r, e) -> timer.cancel(false));
        } catch (RejectedExecutionException e) {
            timedOut(w);
        }
        return answer;
    }

    private void timedOut(Waiter<S> w) {
        Numbered<S> now;
        synchronized (this) {
            if (!waiters.remove(w)) {
                return;
            }
            now = current;
        }
        w.answer.complete(now);
    }

    private void reread() {
        rereadScheduled.set(false); // a poke from here on schedules another re-read
        S s = read.get();
        Object key = changeKey.apply(s);
        Object load = loadKey.apply(s);
        List<Waiter<S>> wake;
        Numbered<S> now;
        synchronized (this) {
            boolean changed = !key.equals(currentKey);
            if (!changed && load.equals(currentLoadKey)) {
                return;
            }
            long wait = publishedNanos + loadIntervalNanos - System.nanoTime();
            if (!changed && wait > 0) {
                // a load change alone waits for its interval; the re-read then takes the newest load
                if (!loadRereadScheduled) {
                    loadRereadScheduled = true;
                    try {
                        thread.schedule(this::loadReread, wait, TimeUnit.NANOSECONDS);
                    } catch (RejectedExecutionException e) {
                        loadRereadScheduled = false; // closed
                    }
                }
                return;
            }
            currentKey = key;
            currentLoadKey = load;
            publishedNanos = System.nanoTime();
            current = new Numbered<>(current.seq() + 1, s);
            now = current;
            wake = new ArrayList<>(waiters);
            waiters.clear();
        }
        for (Waiter<S> w : wake) {
            w.answer.complete(now);
        }
    }

    private void loadReread() {
        synchronized (this) {
            loadRereadScheduled = false;
        }
        reread();
    }

    /** Waiters still parked are answered with the current state. */
    @Override
    public void close() {
        thread.shutdownNow();
        List<Waiter<S>> left;
        Numbered<S> now;
        synchronized (this) {
            left = new ArrayList<>(waiters);
            waiters.clear();
            now = current;
        }
        left.forEach(w -> w.answer.complete(now));
    }

    private record Waiter<S>(CompletableFuture<Numbered<S>> answer) {
    }
}
