package dev.stitch.sidecar.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
