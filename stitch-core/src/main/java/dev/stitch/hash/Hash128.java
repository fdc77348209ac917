package dev.stitch.hash;

import java.util.HexFormat;

/** A 128-bit digest; text form is the canonical big-endian hex (high 64 bits first), lowercase. */
public record Hash128(long hi, long lo) {

    public String hex() {
        HexFormat h = HexFormat.of();
        return h.toHexDigits(hi) + h.toHexDigits(lo);
    }

    /** The 16 canonical bytes, big-endian, high half first. */
    public byte[] bytes() {
        byte[] out = new byte[16];
        for (int i = 0; i < 8; i++) {
            out[i] = (byte) (hi >>> (56 - 8 * i));
            out[8 + i] = (byte) (lo >>> (56 - 8 * i));
        }
        return out;
    }

    /** Parses 32 hex digits, case-insensitively; anything else is an error. */
    public static Hash128 parseHex(String hex) {
        if (hex.length() != 32) {
            throw new IllegalArgumentException("a 128-bit digest has 32 hex digits, got " + hex.length());
        }
        try {
            return new Hash128(Long.parseUnsignedLong(hex.substring(0, 16), 16), Long.parseUnsignedLong(hex.substring(16), 16));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a hex digest: '" + hex + "'", e);
        }
    }

    @Override
    public String toString() {
        return hex();
    }
}
