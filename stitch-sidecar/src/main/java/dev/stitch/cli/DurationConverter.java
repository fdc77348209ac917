package dev.stitch.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Parses a duration option: a whole number with an optional unit, {@code ms}, {@code s} (the default), {@code m}, {@code h} or {@code d}. */
final class DurationConverter implements ITypeConverter<Duration> {
    private static final Pattern FORM = Pattern.compile("(\\d{1,12})(ms|s|m|h|d)?");

    @Override
    public Duration convert(String value) {
        Matcher m = FORM.matcher(value.trim());
        if (!m.matches()) {
            throw new TypeConversionException("'" + value + "' is not a duration (expected e.g. 90s, 10m, 1h, 2d)");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        return switch (unit) {
            case "ms" -> Duration.ofMillis(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            case "d" -> Duration.ofDays(n);
            default -> Duration.ofSeconds(n);
        };
    }
}
