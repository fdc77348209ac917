package dev.stitch.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The canonical JSON of {@code manifest.json} and {@code latest.json} (docs/protocol/board.md §1.5),
 * byte-identical to Python's {@code json.dumps(obj, sort_keys=True) + "\n"}: one line, keys sorted by
 * code point, separators {@code ", "} and {@code ": "}, non-ASCII escaped as {@code \\u} and four lowercase hex digits,
 * floats as Python's {@code repr}.
 */
public final class CanonicalJson {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private CanonicalJson() {
    }

    /** The canonical bytes of {@code node}, with the trailing newline. */
    public static byte[] toBytes(JsonNode node) {
        StringBuilder sb = new StringBuilder(256);
        append(sb, node);
        sb.append('\n');
        return sb.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** The canonical text of {@code node}, without a trailing newline. */
    public static String toText(JsonNode node) {
        StringBuilder sb = new StringBuilder(256);
        append(sb, node);
        return sb.toString();
    }

    /** Appends the canonical form of {@code node}. */
    public static void append(StringBuilder sb, JsonNode node) {
        switch (node.getNodeType()) {
            case OBJECT -> {
                List<Map.Entry<String, JsonNode>> entries = new ArrayList<>(node.properties());
                entries.sort((a, b) -> compareCodePoints(a.getKey(), b.getKey()));
                sb.append('{');
                boolean first = true;
                for (Map.Entry<String, JsonNode> e : entries) {
                    if (!first) {
                        sb.append(", ");
                    }
                    first = false;
                    appendString(sb, e.getKey());
                    sb.append(": ");
                    append(sb, e.getValue());
                }
                sb.append('}');
            }
            case ARRAY -> {
                sb.append('[');
                for (int i = 0; i < node.size(); i++) {
                    if (i > 0) {
                        sb.append(", ");
                    }
                    append(sb, node.get(i));
                }
                sb.append(']');
            }
            case STRING -> appendString(sb, node.textValue());
            case BOOLEAN -> sb.append(node.booleanValue());
            case NULL, MISSING -> sb.append("null");
            case NUMBER -> {
                if (node.isIntegralNumber()) {
                    sb.append(node.bigIntegerValue());
                } else {
                    appendDouble(sb, node.doubleValue());
                }
            }
            default -> throw new IllegalArgumentException("cannot write a " + node.getNodeType() + " node as JSON");
        }
    }

    /**
     * Appends {@code map} as an object of string members in its iteration order, with the canonical
     * separators (the caller supplies the order: a safetensors weight map is sorted by name).
     */
    public static void appendStringMap(StringBuilder sb, java.util.Map<String, String> map) {
        sb.append('{');
        boolean first = true;
        for (java.util.Map.Entry<String, String> e : map.entrySet()) {
            if (!first) {
                sb.append(", ");
            }
            first = false;
            appendString(sb, e.getKey());
            sb.append(": ");
            appendString(sb, e.getValue());
        }
        sb.append('}');
    }

    /** Appends {@code s} as a JSON string with Python's {@code ensure_ascii} escaping. */
    public static void appendString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        sb.append("\\u").append(HEX[(c >> 12) & 0xF]).append(HEX[(c >> 8) & 0xF])
                                .append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /**
     * Appends {@code d} as Python's {@code repr(float)}: the shortest decimal that reads back as
     * {@code d}, positional with at least one fractional digit when the decimal exponent is in
     * (-4, 16], scientific ({@code 1e+16}, {@code 1e-05}) outside; non-finite values are refused
     * because JSON cannot carry them.
     */
    public static void appendDouble(StringBuilder sb, double d) {
        if (!Double.isFinite(d)) {
            throw new IllegalArgumentException("JSON has no representation for " + d);
        }
        if (d == 0.0) {
            sb.append(Double.doubleToRawLongBits(d) < 0 ? "-0.0" : "0.0");
            return;
        }
        // Double.toString gives the shortest round-trip digits (JDK 19+); only the layout differs from Python.
        BigDecimal bd = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        if (bd.precision() == 2) {
            // Java never prints fewer than two digits; Python does when one digit already reads back (5e-324).
            BigDecimal one = bd.round(new MathContext(1, RoundingMode.HALF_EVEN));
            if (Double.parseDouble(one.toString()) == d) {
                bd = one.stripTrailingZeros();
            }
        }
        String digits = bd.unscaledValue().abs().toString();
        int n = digits.length();
        int decpt = n - bd.scale();
        if (d < 0) {
            sb.append('-');
        }
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                sb.append("0.");
                sb.repeat('0', -decpt);
                sb.append(digits);
            } else if (decpt >= n) {
                sb.append(digits);
                sb.repeat('0', decpt - n);
                sb.append(".0");
            } else {
                sb.append(digits, 0, decpt).append('.').append(digits, decpt, n);
            }
        } else {
            sb.append(digits.charAt(0));
            if (n > 1) {
                sb.append('.').append(digits, 1, n);
            }
            int exp = decpt - 1;
            sb.append('e').append(exp < 0 ? '-' : '+');
            int abs = Math.abs(exp);
            if (abs < 10) {
                sb.append('0');
            }
            sb.append(abs);
        }
    }

    /** Python's float repr of {@code d}. */
    public static String formatDouble(double d) {
        StringBuilder sb = new StringBuilder(24);
        appendDouble(sb, d);
        return sb.toString();
    }

    /** Orders strings by Unicode code point, as Python sorts {@code str} keys. */
    static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }
}
