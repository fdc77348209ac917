package dev.stitch.bench.simulate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TimeToServeModelTest {
    private static final double GIB = 1024.0 * 1024 * 1024;

    @Test
    void trafficMatchesTheSpecFloorsForBf16AtThreePercent() {
        // docs/performance-targets.md §7.2: encode 2.71 and apply 1.34 bytes of memory traffic per model byte.
        assertEquals(2.71, TimeToServeModel.trafficPerModelByte(false, true, 0.03, 2), 0.005);
        assertEquals(1.34, TimeToServeModel.trafficPerModelByte(false, false, 0.03, 2), 0.005);
        assertEquals(2.0, TimeToServeModel.trafficPerModelByte(true, true, 0.03, 2));
    }

    @Test
    void scalesPerGibCostsWithCoresAndModelSize() {
        // Measured: 1 GiB, 2 s encode and 1 s apply on one core, 35 MB on the wire in 16 files.
        StageCosts c = new StageCosts("stitch_delta", "xor", (long) GIB, 2.0, 1, 35_000_000, 16, 1.0, 1);
        HostProfile host = new HostProfile(32, 16, 1e6, 1e6, 10, 300e6, 0.05, 16);
        TimeToServeModel.Projection p = TimeToServeModel.project(c, 140 * GIB, 0.03, 2, host);
        assertEquals(140 * 2.0 / 32, p.encodeS(), 1e-9);
        assertEquals(140 * 1.0 / 16, p.applyS(), 1e-9);
        assertEquals(140 * 35e6 / 300e6 + 16 * 0.05, p.transferS(), 1e-9);
        assertEquals(140 * GIB / 10e9, p.reloadS(), 1e-9);
        assertEquals(p.encodeS() + p.transferS() + p.applyS() + p.reloadS(), p.sequentialS(), 1e-9);
    }

    @Test
    void memoryBandwidthCapsManyCores() {
        StageCosts c = new StageCosts("stitch_delta", "xor", (long) GIB, 2.0, 1, 35_000_000, 16, 1.0, 1);
        HostProfile host = new HostProfile(100_000, 100_000, 50, 1e6, 10, 300e6, 0, 16);
        TimeToServeModel.Projection p = TimeToServeModel.project(c, 140 * GIB, 0.03, 2, host);
        double cap = 140 * GIB * TimeToServeModel.trafficPerModelByte(false, true, 0.03, 2) / 50e9;
        assertEquals(cap, p.encodeS(), 1e-9);
    }

    @Test
    void pipelinedTimeMeetsTheTargetAndBeatsTheSum() {
        for (int chunks : new int[] {8, 16, 64}) {
            TimeToServeModel.Projection p = new TimeToServeModel.Projection(10, 30, 5, 20, 0, 1, 1);
            double t = p.pipelinedS(chunks);
            assertEquals(30 + 15.0 / chunks + 20, t, 1e-9);
            assertTrue(t <= 1.2 * p.slowestStageS() + p.reloadS());
            assertTrue(t < p.sequentialS());
        }
        // One chunk is no pipeline at all: the stages add up.
        TimeToServeModel.Projection p = new TimeToServeModel.Projection(10, 30, 5, 20, 0, 1, 1);
        assertEquals(p.sequentialS(), p.pipelinedS(1), 1e-9);
    }

    @Test
    void engineModeSwapsHostApplyAndReloadForTheInPlaceApply() {
        StageCosts c = new StageCosts("sparse_delta", "deltas_zstd", (long) GIB, 2.0, 1, 42_000_000, 16, 1.0, 1);
        HostProfile host = new HostProfile(32, 16, 1e6, 1e6, 2, 300e6, 0.05, 16);
        TimeToServeModel.Projection h = TimeToServeModel.project(c, 140 * GIB, 0.03, 2, host);
        TimeToServeModel.Projection e = TimeToServeModel.projectEngine(c, 0.1, 140 * GIB, 0.03, 2, host);
        // The same trainer and link work in both modes.
        assertEquals(h.encodeS(), e.encodeS(), 1e-9);
        assertEquals(h.transferS(), e.transferS(), 1e-9);
        assertEquals(h.bytes(), e.bytes(), 1e-3);
        assertEquals(0, e.applyS());
        assertEquals(0, e.reloadS());
        assertEquals(0, h.inPlaceApplyS());
        assertEquals(140 * 0.1, e.inPlaceApplyS(), 1e-9);
        assertEquals(e.inPlaceApplyS(), e.pauseS(), 1e-9);
        assertEquals(e.encodeS() + e.transferS() + e.inPlaceApplyS(), e.sequentialS(), 1e-9);
        double slowest = Math.max(e.encodeS(), e.transferS());
        assertEquals(slowest + (e.encodeS() + e.transferS() - slowest) / 16 + e.inPlaceApplyS(), e.pipelinedS(16), 1e-9);
        // A 2 GB/s reload of 150 GB dominates host mode; the in-place apply of 14 s beats it.
        assertEquals("reload", h.dominantStage());
        assertTrue(e.pipelinedS(16) < h.pipelinedS(16), e + " vs " + h);
        assertTrue(TimeToServeModel.STAGES.contains(e.dominantStage()));
    }

    @Test
    void dominantStageIsTheLongestStage() {
        assertEquals("encode", TimeToServeModel.dominantStage(5, 1, 1, 1, 0));
        assertEquals("transfer", TimeToServeModel.dominantStage(1, 5, 1, 1, 0));
        assertEquals("apply", TimeToServeModel.dominantStage(1, 1, 5, 1, 0));
        assertEquals("reload", TimeToServeModel.dominantStage(1, 1, 1, 5, 0));
        assertEquals("in_place_apply", TimeToServeModel.dominantStage(1, 1, 0, 0, 5));
        assertEquals(5, TimeToServeModel.STAGES.size());
    }

    @Test
    void engineModeRefusesFullCheckpointsAndImpossibleCosts() {
        HostProfile host = new HostProfile(32, 16, 100, 2, 2, 300e6, 0.05, 16);
        StageCosts full = new StageCosts("full", "full", (long) GIB, 0.5, 1, (long) GIB, 16, 0.3, 1);
        StageCosts sparse = new StageCosts("sparse_delta", "deltas", (long) GIB, 0.5, 1, 60_000_000, 16, 0.3, 1);
        assertThrows(IllegalArgumentException.class, () -> TimeToServeModel.projectEngine(full, 0.1, GIB, 0.03, 2, host));
        assertThrows(IllegalArgumentException.class, () -> TimeToServeModel.projectEngine(sparse, 0, GIB, 0.03, 2, host));
        assertThrows(IllegalArgumentException.class, () -> TimeToServeModel.projectEngine(sparse, Double.NaN, GIB, 0.03, 2, host));
    }

    @Test
    void fullCheckpointIsBoundByDiskAndLink() {
        StageCosts full = new StageCosts("full", "full", (long) GIB, 0.5, 1, (long) GIB, 16, 0.3, 1);
        HostProfile host = new HostProfile(32, 16, 100, 2, 10, 300e6, 0.05, 16);
        TimeToServeModel.Projection p = TimeToServeModel.project(full, 140 * GIB, 0.03, 2, host);
        assertEquals(140 * GIB / 2e9, p.encodeS(), 1e-6);
        assertEquals(140 * GIB / 300e6 + 16 * 0.05, p.transferS(), 1e-6);
        assertEquals(p.transferS(), p.slowestStageS());
    }

    @Test
    void rejectsImpossibleHosts() {
        assertThrows(IllegalArgumentException.class, () -> new HostProfile(0, 1, 1, 1, 1, 1, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new HostProfile(1, 1, 1, 1, 1, 0, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new HostProfile(1, 1, 1, 1, 1, 1, -1, 1));
    }
}
