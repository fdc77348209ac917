package dev.stitch.demo;

import java.util.Locale;
import picocli.CommandLine;

/** Byte sizes on the command line ({@code 256m}, {@code 1g}: binary units) and in output. */
final class Sizes implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        return parse(value);
    }

    static long parse(String value) {
        String s = value.trim().toLowerCase(Locale.ROOT);
        if (s.isEmpty()) {
            throw new CommandLine.TypeConversionException("empty size");
        }
        long unit = switch (s.charAt(s.length() - 1)) {
            case 'k' -> 1L << 10;
            case 'm' -> 1L << 20;
            case 'g' -> 1L << 30;
            default -> 1;
        };
        String digits = unit == 1 ? s : s.substring(0, s.length() - 1);
        try {
            long n = Long.parseLong(digits);
            if (n <= 0) {
                throw new CommandLine.TypeConversionException("size must be positive: '" + value + "'");
            }
            return Math.multiplyExact(n, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new CommandLine.TypeConversionException("not a size (use e.g. 256m, 1g, 65536): '" + value + "'");
        }
    }

    static String human(long bytes) {
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
