package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The {@code weight_version} constraint of a request (docs/protocol/sidecar-http.md §4.2): an exact pin, a
 * minimum, or nothing. An exact pin wins over the minimum, which is validated but then ignored.
 *
 * @param exact the exact version asked for, if any
 * @param min   the minimum version asked for, if any (either spelling)
 */
public record VersionConstraint(OptionalLong exact, OptionalLong min) {

    /** No constraint: every served version satisfies it. */
    public static final VersionConstraint NONE = new VersionConstraint(OptionalLong.empty(), OptionalLong.empty());

    /** Key names accepted inside the constraint object. */
    public static final String EXACT_VERSION = "exact_version";
    public static final String MIN_REQUIRED_VERSION = "min_required_version";
    public static final String MIN_VERSION = "min_version";

    public VersionConstraint {
        if (exact == null || min == null) {
            throw new NullPointerException("use OptionalLong.empty() for an unset bound");
        }
    }

    /** An exact pin to {@code version}. */
    public static VersionConstraint exactly(long version) {
        return new VersionConstraint(OptionalLong.of(version), OptionalLong.empty());
    }

    /** A minimum of {@code version}. */
    public static VersionConstraint atLeast(long version) {
        return new VersionConstraint(OptionalLong.empty(), OptionalLong.of(version));
    }

    /** True when neither bound is set. */
    public boolean isNone() {
        return exact.isEmpty() && min.isEmpty();
    }

    /** True when the effective bound is an exact pin. */
    public boolean isExact() {
        return exact.isPresent();
    }

    /** The version the effective bound names (exact wins), or -1 when there is none. */
    public long target() {
        if (exact.isPresent()) {
            return exact.getAsLong();
        }
        return min.isPresent() ? min.getAsLong() : -1;
    }

    /** How this constraint judges the version a replica serves. */
    public Verdict evaluate(long current) {
        if (exact.isPresent()) {
            long e = exact.getAsLong();
            if (current == e) {
                return Verdict.SATISFIED;
            }
            return current < e ? Verdict.NOT_READY : Verdict.TOO_OLD;
        }
        if (min.isPresent()) {
            return current >= min.getAsLong() ? Verdict.SATISFIED : Verdict.NOT_READY;
        }
        return Verdict.SATISFIED;
    }

    /** The outcome of judging a served version against a constraint. */
    public enum Verdict {
        /** Served as is. */
        SATISFIED,
        /** 409 {@code WeightVersionNotReady}: the replica is behind the target; retryable. */
        NOT_READY,
        /** 409 {@code WeightVersionTooOld}: an exact pin below the served version; not retryable. */
        TOO_OLD
    }

    /** Result of {@link #parse}: a constraint, or the reason for a 400 {@code InvalidWeightVersion}. */
    public sealed interface ParseResult permits Valid, Invalid {
    }

    /** A well-formed constraint ({@link #NONE} when the value was absent or null). */
    public record Valid(VersionConstraint constraint) implements ParseResult {
    }

    /** A malformed constraint; {@code message} says what was wrong and goes into the 400 body. */
    public record Invalid(String message) implements ParseResult {
    }

    /**
     * Parses the value of the top-level {@code weight_version} key; pass {@code null} when the key is
     * absent. Integers and strings of ASCII digits (ASCII whitespace trimmed) from 0 to 2^63-1 are
     * accepted; fractions, exponents, booleans, negatives, unknown keys and non-object values are not.
     */
    public static ParseResult parse(JsonNode value) {
        if (value == null || value.isNull() || value.isMissingNode()) {
            return new Valid(NONE);
        }
        if (!value.isObject()) {
            return new Invalid("weight_version must be an object with exact_version, min_required_version or min_version, got "
                    + describe(value));
        }
        OptionalLong exact = OptionalLong.empty();
        OptionalLong minRequired = OptionalLong.empty();
        OptionalLong minVersion = OptionalLong.empty();
        for (Map.Entry<String, JsonNode> e : value.properties()) {
            String key = e.getKey();
            if (!key.equals(EXACT_VERSION) && !key.equals(MIN_REQUIRED_VERSION) && !key.equals(MIN_VERSION)) {
                return new Invalid("unknown key '" + key + "' in weight_version (allowed: exact_version, min_required_version, min_version)");
            }
            JsonNode v = e.getValue();
            OptionalLong parsed;
            if (v.isNull()) {
                parsed = OptionalLong.empty();
            } else {
                parsed = versionValue(v);
                if (parsed.isEmpty()) {
                    return new Invalid("weight_version." + key + " must be a non-negative integer or a string of digits, got "
                            + describe(v));
                }
            }
            switch (key) {
                case EXACT_VERSION -> exact = parsed;
                case MIN_REQUIRED_VERSION -> minRequired = parsed;
                default -> minVersion = parsed;
            }
        }
        if (minRequired.isPresent() && minVersion.isPresent() && minRequired.getAsLong() != minVersion.getAsLong()) {
            return new Invalid("weight_version.min_required_version (" + minRequired.getAsLong()
                    + ") and weight_version.min_version (" + minVersion.getAsLong() + ") disagree");
        }
        OptionalLong min = minRequired.isPresent() ? minRequired : minVersion;
        return new Valid(new VersionConstraint(exact, min));
    }

    /** A JSON integer, or a string of ASCII digits with surrounding ASCII whitespace, within 0..2^63-1. */
    static OptionalLong versionValue(JsonNode v) {
        if (v.isIntegralNumber()) {
            if (!v.canConvertToLong() || v.asLong() < 0) {
                return OptionalLong.empty();
            }
            return OptionalLong.of(v.longValue());
        }
        if (v.isTextual()) {
            return ProtocolJson.parseDigitString(v.textValue());
        }
        return OptionalLong.empty();
    }

    private static String describe(JsonNode v) {
        String text = v.toString();
        if (text.length() > 64) {
            text = text.substring(0, 61) + "...";
        }
        return switch (v.getNodeType()) {
            case BOOLEAN -> "boolean " + text;
            case NUMBER -> "number " + text;
            case STRING -> "string " + text;
            case ARRAY -> "array " + text;
            case OBJECT -> "object " + text;
            default -> text;
        };
    }

    @Override
    public String toString() {
        return "VersionConstraint(exact=" + (exact.isPresent() ? exact.getAsLong() : "none")
                + ", min=" + (min.isPresent() ? min.getAsLong() : "none") + ")";
    }
}
