package dev.stitch.rehearsal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One optimizer step as far as the bytes are concerned: about {@code density} of every tensor's bf16
 * elements move by 1 to 4 units in the last place, by integer arithmetic on the bit pattern (so no
 * step ever creates a NaN or an infinity). {@link Pattern#CLUSTERED} changes contiguous runs, as
 * row-sparse gradients (embeddings, a few active heads) do; {@link Pattern#UNIFORM} scatters changes.
 */
public final class TrainerStep {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Where the changed elements of one step sit inside a tensor. */
    public enum Pattern {
        CLUSTERED, UNIFORM;

        public static Pattern parse(String s) {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        }

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final double density;
    private final Pattern pattern;
    private final long seed;

    public TrainerStep(double density, Pattern pattern, long seed) {
        if (!(density >= 0 && density <= 1)) {
            throw new IllegalArgumentException("density must be a fraction in [0, 1], got " + density);
        }
        this.density = density;
        this.pattern = pattern;
        this.seed = seed;
    }

    /**
     * Mutates {@code tensors} in place for step {@code step}; returns the number of element updates
     * made (an element hit twice counts twice, so the encoder's exact count can be slightly lower).
     */
    public long apply(Map<String, MemorySegment> tensors, long step) {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + step);
        long changed = 0;
        for (MemorySegment t : tensors.values()) {
            long n = t.byteSize() / 2;
            long target = Math.round(n * density);
            if (target == 0) {
                continue;
            }
            SplittableRandom r = random.split();
            changed += pattern == Pattern.UNIFORM ? uniform(t, n, target, r) : clustered(t, n, target, r);
        }
        return changed;
    }

    private static long uniform(MemorySegment t, long n, long target, SplittableRandom r) {
        for (long k = 0; k < target; k++) {
            nudge(t, r.nextLong(n), r);
        }
        return target;
    }

    private static long clustered(MemorySegment t, long n, long target, SplittableRandom r) {
        long remaining = target;
        while (remaining > 0) {
            long run = Math.min(remaining, Math.min(n, 32 + r.nextInt(481)));
            long start = r.nextLong(n - run + 1);
            for (long i = start; i < start + run; i++) {
                nudge(t, i, r);
            }
            remaining -= run;
        }
        return target;
    }

    /** Moves one element's magnitude by 1..4 units in the last place, so its bits always change. */
    private static void nudge(MemorySegment t, long index, SplittableRandom r) {
        int bits = t.get(BF16, 2 * index) & 0xFFFF;
        int sign = bits & 0x8000;
        int magnitude = bits & 0x7FFF;
        int step = 1 + r.nextInt(4);
        // Grow small magnitudes and shrink large ones, so repeated steps stay far from 0x7F80 (inf).
        magnitude = magnitude < step || (magnitude < 0x3F00 && r.nextBoolean()) ? magnitude + step : magnitude - step;
        t.set(BF16, 2 * index, (short) (sign | magnitude));
    }

    public double density() {
        return density;
    }

    public Pattern pattern() {
        return pattern;
    }
}
