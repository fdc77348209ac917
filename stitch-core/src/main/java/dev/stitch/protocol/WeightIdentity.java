package dev.stitch.protocol;

import java.util.OptionalLong;

/**
 * The name of a version on a board: {@code weight_v} plus the version in decimal, zero-padded to at
 * least six digits (docs/protocol/board.md §1).
 */
public final class WeightIdentity {
    /** Prefix of every version identity. */
    public static final String PREFIX = "weight_v";

    private WeightIdentity() {
    }

    /** {@code 7 -> "weight_v000007"}, {@code 1234567 -> "weight_v1234567"}. */
    public static String format(long version) {
        if (version < 0) {
            throw new IllegalArgumentException("a version is non-negative, got " + version);
        }
        String digits = Long.toString(version);
        if (digits.length() >= 6) {
            return PREFIX + digits;
        }
        return PREFIX + "000000".substring(digits.length()) + digits;
    }

    /**
     * Parses {@code weight_v} followed by one or more ASCII digits; anything else ({@code base},
     * {@code weight_vxyz}, {@code weight_v}, overflow) is not an identity.
     */
    public static OptionalLong parse(String identity) {
        if (identity == null || !identity.startsWith(PREFIX) || identity.length() == PREFIX.length()) {
            return OptionalLong.empty();
        }
        return parseDigits(identity, PREFIX.length(), identity.length());
    }

    /** Parses {@code text[from, to)} as one or more ASCII digits fitting a non-negative long. */
    static OptionalLong parseDigits(String text, int from, int to) {
        if (from >= to) {
            return OptionalLong.empty();
        }
        long value = 0;
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return OptionalLong.empty();
            }
            int d = c - '0';
            if (value > (Long.MAX_VALUE - d) / 10) {
                return OptionalLong.empty();
            }
            value = value * 10 + d;
        }
        return OptionalLong.of(value);
    }
}
