package dev.stitch.sidecar.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The numbering and waking of the state stream (docs/protocol/sidecar-http.md §5.1), without a sidecar. */
class StateChangeNotifierTest {

    private static final long DEADLINE_S = 15;

    private record Snapshot(long version, int busy) {
    }

    @Test
    void aChangeOfTheKeyWakesWaitersAndCountsOnce() throws Exception {
        AtomicReference<Snapshot> state = new AtomicReference<>(new Snapshot(1, 0));
        try (StateChangeNotifier<Snapshot> n = new StateChangeNotifier<>(state::get, s -> s.version())) {
            long seq = n.await(Long.MIN_VALUE, 0).get(DEADLINE_S, TimeUnit.SECONDS).seq();
            CompletableFuture<StateChangeNotifier.Numbered<Snapshot>> parked = n.await(seq, 25_000);
            state.set(new Snapshot(1, 5)); // outside the key: no change
            n.poke();
            state.set(new Snapshot(2, 5));
            n.poke();
            StateChangeNotifier.Numbered<Snapshot> woken = parked.get(DEADLINE_S, TimeUnit.SECONDS);
            assertEquals(seq + 1, woken.seq());
            assertEquals(2, woken.state().version());
            // already behind: at once
            assertEquals(seq + 1, n.await(seq, 25_000).get(DEADLINE_S, TimeUnit.SECONDS).seq());
        }
    }

    @Test
    void loadChangesAloneAreAnsweredAtMostOncePerIntervalAndCarryTheNewestLoad() throws Exception {
        AtomicReference<Snapshot> state = new AtomicReference<>(new Snapshot(1, 0));
        long interval = 300;
        try (StateChangeNotifier<Snapshot> n = new StateChangeNotifier<>(state::get, s -> s.version(),
                s -> s.busy() > 0, interval)) {
            long seq = n.await(Long.MIN_VALUE, 0).get(DEADLINE_S, TimeUnit.SECONDS).seq();
            // the first load change after a quiet interval is answered at once
            Thread.sleep(interval);
            state.set(new Snapshot(1, 1));
            n.poke();
            StateChangeNotifier.Numbered<Snapshot> first = n.await(seq, 25_000).get(DEADLINE_S, TimeUnit.SECONDS);
            assertEquals(1, first.state().busy());
            long firstAt = System.nanoTime();
            // crossings right after it wait for the interval, then one answer carries the newest load
            CompletableFuture<StateChangeNotifier.Numbered<Snapshot>> parked = n.await(first.seq(), 25_000);
            state.set(new Snapshot(1, 0));
            n.poke();
            state.set(new Snapshot(1, 3));
            n.poke();
            state.set(new Snapshot(1, 0));
            n.poke();
            StateChangeNotifier.Numbered<Snapshot> second = parked.get(DEADLINE_S, TimeUnit.SECONDS);
            assertTrue(System.nanoTime() - firstAt >= TimeUnit.MILLISECONDS.toNanos(interval) - 5_000_000,
                    "a load change inside the interval waits for its end");
            assertEquals(first.seq() + 1, second.seq());
            assertEquals(0, second.state().busy());
            // a change of the key is answered at once, whatever the load did just before
            CompletableFuture<StateChangeNotifier.Numbered<Snapshot>> next = n.await(second.seq(), 25_000);
            long before = System.nanoTime();
            state.set(new Snapshot(2, 1));
            n.poke();
            assertEquals(2, next.get(DEADLINE_S, TimeUnit.SECONDS).state().version());
            assertTrue(System.nanoTime() - before < TimeUnit.MILLISECONDS.toNanos(interval),
                    "a version change does not wait for the load interval");
        }
    }

    @Test
    void aWaitWithoutChangeEndsWithTheSameNumber() throws Exception {
        AtomicReference<Snapshot> state = new AtomicReference<>(new Snapshot(1, 0));
        try (StateChangeNotifier<Snapshot> n = new StateChangeNotifier<>(state::get, s -> s.version())) {
            long seq = n.await(Long.MIN_VALUE, 0).get(DEADLINE_S, TimeUnit.SECONDS).seq();
            n.poke(); // nothing changed
            StateChangeNotifier.Numbered<Snapshot> same = n.await(seq, 100).get(DEADLINE_S, TimeUnit.SECONDS);
            assertEquals(seq, same.seq());
        }
    }

    @Test
    void closingAnswersParkedWaiters() throws Exception {
        AtomicReference<Snapshot> state = new AtomicReference<>(new Snapshot(1, 0));
        StateChangeNotifier<Snapshot> n = new StateChangeNotifier<>(state::get, s -> s.version());
        long seq = n.await(Long.MIN_VALUE, 0).get(DEADLINE_S, TimeUnit.SECONDS).seq();
        CompletableFuture<StateChangeNotifier.Numbered<Snapshot>> parked = n.await(seq, 25_000);
        assertFalse(parked.isDone());
        n.close();
        assertEquals(seq, parked.get(DEADLINE_S, TimeUnit.SECONDS).seq());
    }

    @Test
    void queryCapsTheWaitAndRefusesNonNumbers() {
        ReplicaStateBody.Query q = ReplicaStateBody.Query.parse("after=7&timeout_ms=99999&other=x");
        assertEquals(OptionalLong.of(7), q.after());
        assertEquals(ReplicaStateBody.MAX_TIMEOUT_MS, q.timeoutMillis());
        assertEquals(OptionalLong.empty(), ReplicaStateBody.Query.parse(null).after());
        assertEquals(0, ReplicaStateBody.Query.parse("after=1&timeout_ms=-5").timeoutMillis());
        assertThrows(IllegalArgumentException.class, () -> ReplicaStateBody.Query.parse("after=x"));
        assertThrows(IllegalArgumentException.class, () -> ReplicaStateBody.Query.parse("timeout_ms="));
    }
}
