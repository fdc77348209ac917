package dev.stitch.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class AdmissionGateTest {

    private static final OptionalLong NONE = OptionalLong.empty();

    private static Admission now(CompletableFuture<Admission> f) {
        assertTrue(f.isDone(), "admission should be decided at once");
        return f.join();
    }

    private static Lease admitted(CompletableFuture<Admission> f) {
        return assertInstanceOf(Admission.Admitted.class, now(f)).lease();
    }

    private static Admission.Rejected rejected(CompletableFuture<Admission> f) {
        return assertInstanceOf(Admission.Rejected.class, now(f));
    }

    @Test
    void evaluatesConstraintsAgainstCurrentVersion() {
        AdmissionGate gate = new AdmissionGate("run-a", 3);
        gate.latestSeen(5);
        assertEquals(3, admitted(gate.admit(NONE, NONE, List.of())).startVersion());
        assertEquals(3, admitted(gate.admit(OptionalLong.of(3), NONE, List.of())).startVersion());
        assertEquals(3, admitted(gate.admit(NONE, OptionalLong.of(3), List.of())).startVersion());
        assertEquals(3, admitted(gate.admit(NONE, OptionalLong.of(1), List.of())).startVersion());
        // exact wins over min
        assertEquals(3, admitted(gate.admit(OptionalLong.of(3), OptionalLong.of(99), List.of())).startVersion());

        Admission.Rejected above = rejected(gate.admit(OptionalLong.of(4), NONE, List.of()));
        assertEquals(new Admission.Rejected(Admission.Reason.NOT_READY, 3, 4, 5), above);
        Admission.Rejected below = rejected(gate.admit(OptionalLong.of(2), NONE, List.of()));
        assertEquals(new Admission.Rejected(Admission.Reason.TOO_OLD, 3, 2, 5), below);
        Admission.Rejected minAbove = rejected(gate.admit(NONE, OptionalLong.of(7), List.of()));
        assertEquals(Admission.Reason.NOT_READY, minAbove.reason());
        assertEquals(7, minAbove.target());
        assertEquals(5, gate.activeRequests());
    }

    @Test
    void leaseCountsAndReleasesOnce() {
        AdmissionGate gate = new AdmissionGate(null, 0);
        Lease a = admitted(gate.admit(OptionalLong.of(0), NONE, List.of("r1")));
        Lease b = admitted(gate.admit(NONE, NONE, List.of()));
        assertEquals(2, gate.activeRequests());
        assertEquals(1, gate.inflightExactRequests());
        assertEquals(Map.of(0L, 1), gate.inflightExactVersions());
        assertEquals(null, a.runId());
        assertEquals(0, a.release());
        assertEquals(0, a.release());
        assertEquals(1, gate.activeRequests());
        assertEquals(0, gate.inflightExactRequests());
        assertTrue(gate.inflightExactVersions().isEmpty());
        b.release();
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void closedAllParksEveryRequestAndReevaluatesAfterFlip() throws Exception {
        AdmissionGate gate = new AdmissionGate("r", 1);
        gate.close(AdmissionGate.State.CLOSED_ALL);
        CompletableFuture<Admission> plain = gate.admit(NONE, NONE, List.of());
        CompletableFuture<Admission> oldPin = gate.admit(OptionalLong.of(1), NONE, List.of());
        CompletableFuture<Admission> newPin = gate.admit(OptionalLong.of(2), NONE, List.of());
        assertFalse(plain.isDone());
        assertFalse(oldPin.isDone());
        assertEquals(3, gate.waitingRequests());
        gate.drain(TimeUnit.SECONDS.toNanos(1), 0, p -> { });
        gate.flip("r", 2);
        gate.reopen();
        assertEquals(2, admitted(plain).startVersion());
        assertEquals(Admission.Reason.TOO_OLD, rejected(oldPin).reason());
        assertEquals(2, admitted(newPin).startVersion());
        assertEquals(AdmissionGate.State.OPEN, gate.state());
        assertEquals(0, gate.waitingRequests());
    }

    @Test
    void closedExactAdmitsNonExactAtOldVersion() throws Exception {
        AdmissionGate gate = new AdmissionGate(null, 4);
        gate.close(AdmissionGate.State.CLOSED_EXACT);
        Lease plain = admitted(gate.admit(NONE, OptionalLong.of(4), List.of()));
        CompletableFuture<Admission> exact = gate.admit(OptionalLong.of(4), NONE, List.of());
        assertFalse(exact.isDone());
        // the in-flight non-exact request does not block an in_place drain
        AdmissionGate.DrainOutcome outcome = gate.drain(TimeUnit.MILLISECONDS.toNanos(100), 0, p -> { });
        assertTrue(outcome.preempted().isEmpty());
        gate.flip(null, 5);
        gate.reopen();
        assertEquals(4, plain.startVersion());
        assertEquals(5, plain.release(), "non-exact request crossed the commit: start < end");
        assertEquals(Admission.Reason.TOO_OLD, rejected(exact).reason());
    }

    @Test
    void drainWaitsForExactPinsInInPlaceMode() throws Exception {
        AdmissionGate gate = new AdmissionGate(null, 2);
        Lease pin = admitted(gate.admit(OptionalLong.of(2), NONE, List.of("p")));
        gate.close(AdmissionGate.State.CLOSED_EXACT);
        ExecutorService exec = Executors.newSingleThreadExecutor();
        try {
            Future<AdmissionGate.DrainOutcome> drain =
                    exec.submit(() -> gate.drain(TimeUnit.SECONDS.toNanos(5), 0, p -> { }));
            Thread.sleep(50);
            assertFalse(drain.isDone(), "an in-flight exact pin must block an in_place commit");
            assertEquals(2, pin.release());
            AdmissionGate.DrainOutcome out = drain.get(5, TimeUnit.SECONDS);
            assertTrue(out.preempted().isEmpty());
        } finally {
            exec.shutdownNow();
        }
    }

    @Test
    void drainTimeoutPreemptsBlockingRequests() throws Exception {
        AdmissionGate gate = new AdmissionGate(null, 1);
        Lease stuck = admitted(gate.admit(NONE, NONE, List.of("rid-1")));
        AtomicInteger preemptActions = new AtomicInteger();
        stuck.onPreempt(() -> {
            preemptActions.incrementAndGet();
            stuck.release(); // the data plane answers 503 RequestPreempted and releases
        });
        gate.close(AdmissionGate.State.CLOSED_ALL);
        List<AdmissionGate.Preempted> seen = new ArrayList<>();
        AdmissionGate.DrainOutcome out = gate.drain(TimeUnit.MILLISECONDS.toNanos(50),
                TimeUnit.SECONDS.toNanos(2), seen::addAll);
        assertEquals(1, preemptActions.get());
        assertEquals(List.of(new AdmissionGate.Preempted(List.of("rid-1"), false, 1)), seen);
        assertEquals(seen, out.preempted());
        assertTrue(out.waitNanos() >= TimeUnit.MILLISECONDS.toNanos(50));
        assertEquals(0, gate.activeRequests());
        // registering after the preemption runs nothing twice
        stuck.onPreempt(preemptActions::incrementAndGet);
        assertEquals(1, preemptActions.get());
    }

    @Test
    void preemptActionRegisteredLateRunsAtOnce() throws Exception {
        AdmissionGate gate = new AdmissionGate(null, 1);
        Lease lease = admitted(gate.admit(NONE, NONE, List.of()));
        gate.close(AdmissionGate.State.CLOSED_ALL);
        Thread releaser = new Thread(() -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            lease.release();
        });
        releaser.start();
        gate.drain(TimeUnit.MILLISECONDS.toNanos(10), TimeUnit.SECONDS.toNanos(5), p -> { });
        CountDownLatch ran = new CountDownLatch(1);
        lease.onPreempt(ran::countDown);
        assertTrue(ran.await(1, TimeUnit.SECONDS));
        releaser.join();
    }

    @Test
    void drainFailsWhenPreemptedRequestsNeverFinish() {
        AdmissionGate gate = new AdmissionGate(null, 1);
        admitted(gate.admit(NONE, NONE, List.of("x")));
        gate.close(AdmissionGate.State.CLOSED_ALL);
        AdmissionGate.DrainTimeoutException e = assertThrows(AdmissionGate.DrainTimeoutException.class,
                () -> gate.drain(TimeUnit.MILLISECONDS.toNanos(10), TimeUnit.MILLISECONDS.toNanos(20), p -> { }));
        assertTrue(e.getMessage().contains("1 request(s)"), e.getMessage());
        gate.reopen();
        assertEquals(AdmissionGate.State.OPEN, gate.state());
    }

    @Test
    void cancelledWaiterIsWithdrawn() {
        AdmissionGate gate = new AdmissionGate(null, 1);
        gate.close(AdmissionGate.State.CLOSED_ALL);
        CompletableFuture<Admission> f = gate.admit(NONE, NONE, List.of());
        assertEquals(1, gate.waitingRequests());
        f.cancel(false);
        assertEquals(0, gate.waitingRequests());
        gate.reopen();
        assertEquals(0, gate.activeRequests());
    }

    @Test
    void unknownEngineStateRejectsVersionedRequests() {
        AdmissionGate gate = new AdmissionGate(null, 3);
        gate.close(AdmissionGate.State.CLOSED_ALL);
        CompletableFuture<Admission> parked = gate.admit(NONE, NONE, List.of());
        gate.engineConsistent(false);
        Admission.Rejected r = rejected(parked);
        assertEquals(Admission.Reason.ENGINE_UNAVAILABLE, r.reason());
        assertEquals(-1, r.target());
        gate.reopen();
        assertEquals(Admission.Reason.ENGINE_UNAVAILABLE, rejected(gate.admit(NONE, NONE, List.of())).reason());
        gate.engineConsistent(true);
        admitted(gate.admit(NONE, NONE, List.of()));
    }

    @Test
    void closeTwiceOrFlipWhileOpenIsAProgrammingError() {
        AdmissionGate gate = new AdmissionGate(null, 0);
        assertThrows(IllegalStateException.class, () -> gate.flip(null, 1));
        gate.close(AdmissionGate.State.CLOSED_EXACT);
        assertThrows(IllegalStateException.class, () -> gate.close(AdmissionGate.State.CLOSED_ALL));
        assertThrows(IllegalArgumentException.class, () -> new AdmissionGate(null, 0).close(AdmissionGate.State.OPEN));
    }

    @Test
    void requestsArrivingDuringDrainDoNotStarveIt() throws Exception {
        AdmissionGate gate = new AdmissionGate(null, 0);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        AtomicInteger served = new AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        try {
            for (int i = 0; i < 4; i++) {
                clients.submit(() -> {
                    while (!stop.get()) {
                        Admission a = gate.admit(NONE, NONE, List.of()).get(5, TimeUnit.SECONDS);
                        if (a instanceof Admission.Admitted ad) {
                            Thread.sleep(2);
                            ad.lease().release();
                            served.incrementAndGet();
                        }
                    }
                    return null;
                });
            }
            Thread.sleep(50);
            for (int v = 1; v <= 5; v++) {
                gate.close(AdmissionGate.State.CLOSED_ALL);
                AdmissionGate.DrainOutcome out = gate.drain(TimeUnit.SECONDS.toNanos(2), 0, p -> { });
                assertTrue(out.preempted().isEmpty());
                assertEquals(0, gate.activeRequests());
                gate.flip(null, v);
                gate.reopen();
                Thread.sleep(10);
            }
        } finally {
            stop.set(true);
            clients.shutdown();
            assertTrue(clients.awaitTermination(10, TimeUnit.SECONDS));
        }
        assertTrue(served.get() > 0);
        assertEquals(0, gate.activeRequests());
        assertEquals(5, gate.currentVersion());
    }
}
