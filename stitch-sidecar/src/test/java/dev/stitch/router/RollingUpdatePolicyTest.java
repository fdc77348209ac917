package dev.stitch.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RollingUpdatePolicyTest {

    static ReplicaView serving(String url, long served, Map<Long, Integer> pinned) {
        return new ReplicaView(url, true, served, served + 1, true, true, 0, false, pinned);
    }

    static ReplicaView committing(String url, long served) {
        return new ReplicaView(url, true, served, served + 1, true, false, 0, true, Map.of());
    }

    static String denial(CommitPermission p) {
        return assertInstanceOf(CommitPermission.Denied.class, p).reason();
    }

    @Test
    void commitLimitParsesCountsAndShares() {
        assertEquals(2, CommitLimit.parse("2").replicas(10));
        assertEquals(3, CommitLimit.parse("25%").replicas(10));
        assertEquals(1, CommitLimit.parse(" 10% ").replicas(3));
        assertEquals(4, CommitLimit.parse("100%").replicas(4));
        for (String bad : new String[] {"0", "-1", "0%", "101%", "x", "%", ""}) {
            assertThrows(IllegalArgumentException.class, () -> CommitLimit.parse(bad), bad);
        }
    }

    @Test
    void grantsUpToMaxCommittingThenDenies() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 250, 60_000);
        List<ReplicaView> fleet = List.of(serving("a", 1, Map.of()), serving("b", 1, Map.of()), serving("c", 1, Map.of()));
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "a", 1, 2, 0));
        // a has not yet reported committing: its grant still counts
        CommitPermission second = p.decide(fleet, "b", 1, 2, 1);
        assertEquals("max_committing", denial(second));
        assertEquals("{\"granted\":false,\"retry_after_ms\":250}", second.json());
        // asking again while holding a grant is answered again, not counted against itself
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "a", 1, 2, 2));
    }

    @Test
    void aGrantEndsWhenTheReplicaServesTheNewVersion() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 100, 60_000);
        List<ReplicaView> before = List.of(serving("a", 1, Map.of()), serving("b", 1, Map.of()));
        p.decide(before, "a", 1, 2, 0);
        List<ReplicaView> during = List.of(committing("a", 1), serving("b", 1, Map.of()));
        assertEquals("max_committing", denial(p.decide(during, "b", 1, 2, 1)));
        List<ReplicaView> after = List.of(serving("a", 2, Map.of()), serving("b", 1, Map.of()));
        CommitPermission granted = p.decide(after, "b", 1, 2, 2);
        assertEquals("{\"granted\":true}", granted.json());
        assertEquals(1, p.outstandingGrants());
    }

    @Test
    void aGrantLapsesAfterItsLeaseWhenTheReplicaNeverReports() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 100, 1_000);
        List<ReplicaView> fleet = List.of(serving("a", 1, Map.of()), serving("b", 1, Map.of()));
        p.decide(fleet, "a", 1, 2, 0);
        assertEquals("max_committing", denial(p.decide(fleet, "b", 1, 2, 999)));
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "b", 1, 2, 1_000));
    }

    @Test
    void aSharedLimitScalesWithTheFleet() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("50%"), 0, 100, 60_000);
        List<ReplicaView> fleet = List.of(serving("a", 1, Map.of()), serving("b", 1, Map.of()),
                committing("c", 1), serving("d", 1, Map.of()));
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "a", 1, 2, 0));
        assertEquals("max_committing", denial(p.decide(fleet, "b", 1, 2, 0)));
    }

    @Test
    void holdPreviousKeepsKReplicasOnTheOldVersionWhilePinnedRequestsAreInFlight() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("100%"), 1, 100, 60_000);
        List<ReplicaView> fleet = List.of(serving("a", 1, Map.of(1L, 3)), serving("b", 1, Map.of()),
                serving("c", 2, Map.of()));
        // a may go: b stays on version 1
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "a", 1, 2, 0));
        // b may not: a holds a grant, so nobody else would stay on 1 while pins to 1 are in flight
        assertEquals("hold_previous", denial(p.decide(fleet, "b", 1, 2, 0)));
    }

    @Test
    void holdPreviousLetsGoOnceNoPinnedRequestIsInFlight() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("100%"), 2, 100, 60_000);
        List<ReplicaView> pinned = List.of(serving("a", 1, Map.of(2L, 1, 1L, 1)), serving("b", 1, Map.of()));
        assertEquals("hold_previous", denial(p.decide(pinned, "a", 1, 2, 0)));
        List<ReplicaView> drained = List.of(serving("a", 1, Map.of(2L, 1)), serving("b", 1, Map.of()));
        assertInstanceOf(CommitPermission.Granted.class, p.decide(drained, "a", 1, 2, 1));
    }

    @Test
    void holdPreviousIgnoresPinsOnUnreachableReplicas() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("100%"), 1, 100, 60_000);
        List<ReplicaView> fleet = List.of(serving("a", 1, Map.of()), serving("b", 1, Map.of(1L, 4)).unreachable());
        assertInstanceOf(CommitPermission.Granted.class, p.decide(fleet, "a", 1, 2, 0));
    }

    @Test
    void refusesNonsenseSettings() {
        assertThrows(IllegalArgumentException.class, () -> new RollingUpdatePolicy(CommitLimit.parse("1"), -1, 100, 1));
        assertThrows(IllegalArgumentException.class, () -> new RollingUpdatePolicy(CommitLimit.parse("1"), 0, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new CommitLimit(1, 10));
    }

    @Test
    void recentlyRoutedPinsHoldThePreviousVersionEvenWhenNoneIsInFlightRightNow() {
        RollingUpdatePolicy p = new RollingUpdatePolicy(CommitLimit.parse("1"), 1, 100, 60_000);
        List<ReplicaView> fleet = List.of(serving("a", 2, Map.of()), serving("b", 1, Map.of()));
        p.pinnedRouted(1, 1_000);
        assertEquals("hold_previous", denial(p.decide(fleet, "b", 1, 2, 1_500)));
        // once the demand is older than the window, the last replica on 1 may move on
        assertInstanceOf(CommitPermission.Granted.class,
                p.decide(fleet, "b", 1, 2, 1_000 + RollingUpdatePolicy.DEMAND_WINDOW_MS));
    }
}
