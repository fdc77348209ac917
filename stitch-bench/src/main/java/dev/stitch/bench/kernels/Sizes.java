package dev.stitch.bench.kernels;

import java.util.Locale;

/** Byte sizes with k/m/g suffixes (KiB, MiB, GiB), as every stitch command takes them. */
final class Sizes {
    private Sizes() {
    }

    static long parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        long unit = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k' -> unit = 1L << 10;
                case 'm' -> unit = 1L << 20;
                case 'g' -> unit = 1L << 30;
                default -> unit = 1;
            }
        }
        String digits = unit == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long v = Long.parseLong(digits);
            if (v < 0) {
                throw new IllegalArgumentException("size must not be negative: '" + text + "'");
            }
            return Math.multiplyExact(v, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("not a size: '" + text + "' (use e.g. 8m, 256m, 1g)", e);
        }
    }

    static String format(long bytes) {
        if (bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "g";
        }
        if (bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "m";
        }
        if (bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "k";
        }
        return Long.toString(bytes);
    }
}
