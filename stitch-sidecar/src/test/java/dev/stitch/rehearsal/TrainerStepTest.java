package dev.stitch.rehearsal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TrainerStepTest {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Changed elements and changed runs (maximal stretches of adjacent changed elements) of one step. */
    private static long[] step(TrainerStep.Pattern pattern) {
        try (SyntheticModel m = SyntheticModel.generate(2L << 20, 4); Arena arena = Arena.ofConfined()) {
            MemorySegment before = arena.allocate(m.tensors().get("lm_head.weight").byteSize());
            before.copyFrom(m.tensors().get("lm_head.weight"));
            new TrainerStep(0.03, pattern, 4).apply(m.tensors(), 1);
            MemorySegment after = m.tensors().get("lm_head.weight");
            long n = after.byteSize() / 2;
            long changed = 0;
            long runs = 0;
            boolean inRun = false;
            for (long i = 0; i < n; i++) {
                short x = before.get(BF16, 2 * i);
                short y = after.get(BF16, 2 * i);
                boolean diff = x != y;
                if (diff) {
                    changed++;
                    assertTrue(Float.isFinite(SyntheticModel.Bf16.toFloat(y)));
                    assertEquals(x & 0x8000, y & 0x8000, "a step never flips the sign");
                    int ulps = Math.abs((x & 0x7FFF) - (y & 0x7FFF));
                    assertTrue(ulps >= 1 && ulps <= 8, "moved by " + ulps + " ulp");
                    runs += inRun ? 0 : 1;
                }
                inRun = diff;
            }
            return new long[] {n, changed, runs};
        }
    }

    @Test
    void uniformChangesAboutDensityScattered() {
        long[] r = step(TrainerStep.Pattern.UNIFORM);
        double density = (double) r[1] / r[0];
        assertTrue(density > 0.025 && density <= 0.031, "density " + density);
        assertTrue(r[2] > r[1] * 0.9, "uniform changes are mostly isolated: " + r[2] + " runs of " + r[1]);
    }

    @Test
    void clusteredChangesComeInRuns() {
        long[] r = step(TrainerStep.Pattern.CLUSTERED);
        double density = (double) r[1] / r[0];
        assertTrue(density > 0.025 && density <= 0.031, "density " + density);
        assertTrue(r[2] * 16 < r[1], "clustered changes form runs: " + r[2] + " runs of " + r[1]);
    }

    @Test
    void sameSeedAndStepGiveTheSameUpdate() {
        try (SyntheticModel a = SyntheticModel.generate(1L << 20, 2); SyntheticModel b = SyntheticModel.generate(1L << 20, 2)) {
            new TrainerStep(0.05, TrainerStep.Pattern.CLUSTERED, 8).apply(a.tensors(), 3);
            new TrainerStep(0.05, TrainerStep.Pattern.CLUSTERED, 8).apply(b.tensors(), 3);
            for (Map.Entry<String, MemorySegment> e : a.tensors().entrySet()) {
                assertEquals(-1, e.getValue().mismatch(b.tensors().get(e.getKey())), e.getKey());
            }
        }
    }

    @Test
    void rejectsDensityOutsideZeroToOne() {
        assertThrows(IllegalArgumentException.class, () -> new TrainerStep(1.5, TrainerStep.Pattern.UNIFORM, 1));
        assertThrows(IllegalArgumentException.class, () -> new TrainerStep(Double.NaN, TrainerStep.Pattern.UNIFORM, 1));
    }
}
