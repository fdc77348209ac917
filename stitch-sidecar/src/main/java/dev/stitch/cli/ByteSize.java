package dev.stitch.cli;

import java.util.Locale;
import picocli.CommandLine;

/**
 * Byte sizes as every stitch command takes them: a count with an optional {@code k}/{@code m}/{@code g}
 * suffix (KiB, MiB, GiB; a trailing {@code b} is allowed), e.g. {@code 65536}, {@code 256m}, {@code 1g}.
 * Also the picocli converter for {@code long} size options.
 */
public final class ByteSize implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        try {
            return parse(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }

    /**
     * Parses a positive size.
     *
     * @throws IllegalArgumentException naming the text when it is not a positive size
     */
    public static long parse(String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.endsWith("b") && t.length() > 1 && !Character.isDigit(t.charAt(t.length() - 2))) {
            t = t.substring(0, t.length() - 1);
        }
        long unit = 1;
        if (!t.isEmpty()) {
            unit = switch (t.charAt(t.length() - 1)) {
                case 'k' -> 1L << 10;
                case 'm' -> 1L << 20;
                case 'g' -> 1L << 30;
                default -> 1;
            };
        }
        String digits = unit == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long n = Long.parseLong(digits);
            if (n <= 0) {
                throw new IllegalArgumentException("size must be positive, not '" + text + "'");
            }
            return Math.multiplyExact(n, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("not a size (use e.g. 65536, 512k, 256m, 1g): '" + text + "'", e);
        }
    }

    /** Parses the value of {@code option}, failing the command with a one-line reason. */
    public static long parse(String option, String text) {
        try {
            return parse(text);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(option + ": " + e.getMessage());
        }
    }

    /** The shortest exact suffix form ({@code 1g}, {@code 256m}, {@code 3000}), which {@link #parse} reads back. */
    public static String exact(long bytes) {
        if (bytes > 0 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "g";
        }
        if (bytes > 0 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "m";
        }
        if (bytes > 0 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "k";
        }
        return Long.toString(bytes);
    }

    /** A readable approximate form for output ({@code 235.5 MiB}). */
    public static String human(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        if (bytes >= 1L << 10) {
            return String.format(Locale.ROOT, "%.1f KiB", bytes / (double) (1L << 10));
        }
        return bytes + " B";
    }
}
