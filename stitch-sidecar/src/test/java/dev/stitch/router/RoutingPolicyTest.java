package dev.stitch.router;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import dev.stitch.protocol.VersionConstraint.Verdict;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RoutingPolicyTest {

    static ReplicaView replica(String url, long served, int load) {
        return new ReplicaView(url, true, served, served, true, true, load, false, Map.of());
    }

    static ReplicaView catchingUp(String url, long served, long latestSeen, boolean committing) {
        return new ReplicaView(url, true, served, latestSeen, true, true, 0, committing, Map.of());
    }

    static RoutingDecision.Forward forward(RoutingDecision d) {
        return assertInstanceOf(RoutingDecision.Forward.class, d);
    }

    static RoutingDecision.Reject reject(RoutingDecision d) {
        return assertInstanceOf(RoutingDecision.Reject.class, d);
    }

    @Test
    void unconstrainedGoesToTheLeastLoadedRoutableReplica() {
        List<ReplicaView> fleet = List.of(replica("a", 3, 5), replica("b", 2, 1), replica("c", 4, 2));
        assertEquals("b", forward(RoutingPolicy.choose(fleet, VersionConstraint.NONE, null)).replica());
    }

    @Test
    void tiesInLoadGoToTheEarlierMember() {
        List<ReplicaView> fleet = List.of(replica("a", 3, 1), replica("b", 3, 1));
        assertEquals("a", forward(RoutingPolicy.choose(fleet, VersionConstraint.NONE, null)).replica());
    }

    @Test
    void exactPinGoesOnlyWhereThatVersionIsServed() {
        List<ReplicaView> fleet = List.of(replica("a", 3, 0), replica("b", 2, 9), replica("c", 2, 4), replica("d", 1, 0));
        RoutingDecision.Forward f = forward(RoutingPolicy.choose(fleet, VersionConstraint.exactly(2), null));
        assertEquals("c", f.replica());
        assertEquals(AffinityOutcome.NONE, f.affinity());
    }

    @Test
    void minimumAcceptsAnyVersionAtOrAboveIt() {
        List<ReplicaView> fleet = List.of(replica("a", 1, 0), replica("b", 2, 3), replica("c", 5, 2));
        assertEquals("c", forward(RoutingPolicy.choose(fleet, VersionConstraint.atLeast(2), null)).replica());
        assertEquals("a", forward(RoutingPolicy.choose(fleet, VersionConstraint.atLeast(1), null)).replica());
    }

    @Test
    void replicasNotReadyNotAdmittingOrUnreachableAreSkipped() {
        List<ReplicaView> fleet = List.of(
                new ReplicaView("notReady", true, 2, 2, false, true, 0, false, Map.of()),
                new ReplicaView("gateClosed", true, 2, 2, true, false, 0, false, Map.of()),
                new ReplicaView("gone", false, 2, 2, true, true, 0, false, Map.of()),
                replica("busy", 2, 50));
        assertEquals("busy", forward(RoutingPolicy.choose(fleet, VersionConstraint.exactly(2), null)).replica());
        assertEquals("busy", forward(RoutingPolicy.choose(fleet, VersionConstraint.NONE, null)).replica());
    }

    @Test
    void affinityIsKeptEvenWhenAnotherReplicaIsLessLoaded() {
        List<ReplicaView> fleet = List.of(replica("a", 2, 0), replica("b", 2, 7));
        RoutingDecision.Forward f = forward(RoutingPolicy.choose(fleet, VersionConstraint.exactly(2), "b"));
        assertEquals("b", f.replica());
        assertEquals(AffinityOutcome.KEPT, f.affinity());
    }

    @Test
    void affinityBreaksWhenTheSessionReplicaNoLongerSatisfiesTheConstraint() {
        List<ReplicaView> fleet = List.of(replica("a", 2, 0), replica("b", 3, 0));
        RoutingDecision.Forward f = forward(RoutingPolicy.choose(fleet, VersionConstraint.exactly(2), "b"));
        assertEquals("a", f.replica());
        assertEquals(AffinityOutcome.BROKEN, f.affinity());
    }

    @Test
    void affinityBreaksWhenTheSessionReplicaIsDrainedOrGone() {
        List<ReplicaView> fleet = List.of(replica("a", 2, 0), replica("b", 2, 0).unreachable());
        assertEquals(AffinityOutcome.BROKEN, forward(RoutingPolicy.choose(fleet, VersionConstraint.NONE, "b")).affinity());
        assertEquals(AffinityOutcome.BROKEN, forward(RoutingPolicy.choose(fleet, VersionConstraint.NONE, "removed")).affinity());
    }

    @Test
    void pinAheadOfEveryReplicaIsNotReadyWithTheNearestReplicasBody() {
        List<ReplicaView> fleet = List.of(replica("a", 2, 0), replica("b", 3, 0));
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(fleet, VersionConstraint.exactly(5), null));
        assertEquals(409, r.status());
        assertEquals("WeightVersionNotReady", r.reason());
        assertArrayEquals(ProxyErrors.versionConflict(Verdict.NOT_READY, 3, 5, 3), r.body());
        assertFalse(r.retryAfter(), "nobody has seen version 5: waiting is no promise");
    }

    @Test
    void retryAfterWhenSomeReplicaHasSeenTheTargetOrIsCommitting() {
        List<ReplicaView> seen = List.of(replica("a", 2, 0), catchingUp("b", 3, 5, false));
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(seen, VersionConstraint.atLeast(5), null));
        assertTrue(r.retryAfter());
        assertArrayEquals(ProxyErrors.versionConflict(Verdict.NOT_READY, 3, 5, 5), r.body());

        List<ReplicaView> committing = List.of(replica("a", 2, 0), catchingUp("b", 3, 3, true));
        assertTrue(reject(RoutingPolicy.choose(committing, VersionConstraint.exactly(4), null)).retryAfter());
    }

    @Test
    void pinBelowEveryReplicaIsTooOldAndNotRetryable() {
        List<ReplicaView> fleet = List.of(replica("a", 4, 0), replica("b", 3, 0));
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(fleet, VersionConstraint.exactly(2), null));
        assertEquals(409, r.status());
        assertEquals("WeightVersionTooOld", r.reason());
        assertArrayEquals(ProxyErrors.versionConflict(Verdict.TOO_OLD, 3, 2, 4), r.body());
        assertFalse(r.retryAfter());
    }

    @Test
    void pinBetweenReplicasIsNotReadyWhenABehindReplicaCanStillReachIt() {
        // a serves 1 and has seen 3, b already serves 4: a pin to 3 is not served now but a will get there.
        List<ReplicaView> fleet = List.of(catchingUp("a", 1, 3, false), replica("b", 4, 0));
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(fleet, VersionConstraint.exactly(3), null));
        assertEquals("WeightVersionNotReady", r.reason());
        assertTrue(r.retryAfter());
    }

    @Test
    void drainedReplicaCatchingUpTurnsTooOldIntoNotReady() {
        ReplicaView drained = new ReplicaView("a", true, 1, 3, false, false, 0, true, Map.of());
        List<ReplicaView> fleet = List.of(drained, replica("b", 4, 0));
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(fleet, VersionConstraint.exactly(3), null));
        assertEquals("WeightVersionNotReady", r.reason());
        assertArrayEquals(ProxyErrors.versionConflict(Verdict.NOT_READY, 1, 3, 4), r.body());
        assertTrue(r.retryAfter());
    }

    @Test
    void noRoutableReplicaIsEngineUnavailable() {
        List<ReplicaView> fleet = List.of(ReplicaView.unknown("a"), replica("b", 2, 0).unreachable());
        RoutingDecision.Reject r = reject(RoutingPolicy.choose(fleet, VersionConstraint.NONE, null));
        assertEquals(503, r.status());
        assertEquals("EngineUnavailable", r.reason());
        assertArrayEquals(ProxyErrors.engineUnavailable(), r.body());
        assertTrue(r.retryAfter());
        assertEquals(503, reject(RoutingPolicy.choose(List.of(), VersionConstraint.exactly(1), null)).status());
    }

    @Test
    void sessionTableForgetsTheLeastRecentlyUsedSession() {
        SessionTable t = new SessionTable(2);
        t.routed("s1", "a");
        t.routed("s2", "b");
        assertEquals("a", t.lastReplica("s1"));
        t.routed("s3", "c");
        assertEquals(2, t.size());
        assertEquals(null, t.lastReplica("s2"));
        assertEquals("a", t.lastReplica("s1"));
        assertEquals(null, t.lastReplica(null));
        t.routed(null, "a");
        assertEquals(2, t.size());
    }
}
