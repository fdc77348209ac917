package dev.stitch.protocol;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.OptionalLong;

/** The Jackson setup and the lenient scalar rules shared by every protocol document. */
public final class ProtocolJson {
    /** Reads strict JSON: trailing garbage is an error, floats stay doubles (as Python reads them). */
    public static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(200).build())
                    .build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(JsonParser.Feature.AUTO_CLOSE_SOURCE)
            .build();

    private ProtocolJson() {
    }

    /** Parses a whole document; malformed JSON is a {@link ProtocolException} naming {@code what}. */
    public static JsonNode parse(byte[] bytes, String what) throws ProtocolException {
        try {
            JsonNode node = MAPPER.readTree(bytes);
            if (node == null || node.isMissingNode()) {
                throw new ProtocolException(what + ": empty document");
            }
            requireFiniteNumbers(node, what);
            return node;
        } catch (ProtocolException e) {
            throw e;
        } catch (IOException e) {
            throw new ProtocolException(what + ": invalid JSON (" + firstLine(e.getMessage()) + ")", e);
        }
    }

    /**
     * Refuses a number that overflowed a double (such as {@code 1e999}): canonical JSON (1.5) has no
     * spelling for infinity, so such a document could be read but never written back.
     */
    private static void requireFiniteNumbers(JsonNode node, String what) throws ProtocolException {
        if (node.isContainerNode()) {
            for (JsonNode child : node) {
                requireFiniteNumbers(child, what);
            }
        } else if (node.isFloatingPointNumber() && !Double.isFinite(node.doubleValue())) {
            throw new ProtocolException(what + ": number out of range for a double");
        }
    }

    /** ASCII digits with surrounding ASCII whitespace, within 0..2^63-1; anything else is empty. */
    public static OptionalLong parseDigitString(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && isAsciiSpace(s.charAt(from))) {
            from++;
        }
        while (to > from && isAsciiSpace(s.charAt(to - 1))) {
            to--;
        }
        return WeightIdentity.parseDigits(s, from, to);
    }

    /**
     * A non-negative integer field: a JSON number with no fraction, or a string of ASCII digits
     * (1.2); {@code null} when absent or null.
     */
    static Long lenientLong(JsonNode obj, String key, String what) throws ProtocolException {
        JsonNode v = obj.get(key);
        if (v == null || v.isNull()) {
            return null;
        }
        OptionalLong parsed = VersionConstraint.versionValue(v);
        if (parsed.isEmpty()) {
            throw new ProtocolException(what + ": '" + key + "' must be a non-negative integer or a string of digits, got " + v);
        }
        return parsed.getAsLong();
    }

    /** A float field (epoch seconds); integers are accepted; {@code dflt} when absent or null. */
    static double lenientDouble(JsonNode obj, String key, double dflt, String what) throws ProtocolException {
        JsonNode v = obj.get(key);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isNumber() || !Double.isFinite(v.doubleValue())) {
            throw new ProtocolException(what + ": '" + key + "' must be a finite number, got " + v);
        }
        return v.doubleValue();
    }

    /** A string field; {@code null} when absent or null, an error for other types. */
    static String optionalString(JsonNode obj, String key, String what) throws ProtocolException {
        JsonNode v = obj.get(key);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new ProtocolException(what + ": '" + key + "' must be a string, got " + v);
        }
        return v.textValue();
    }

    /** Checks {@code protocol_version}: absent means 1, anything but 1 is a read error. */
    static void checkProtocolVersion(JsonNode obj, String what) throws ProtocolException {
        JsonNode v = obj.get("protocol_version");
        if (v == null || v.isNull()) {
            return;
        }
        OptionalLong p = VersionConstraint.versionValue(v);
        if (p.isEmpty() || p.getAsLong() != 1) {
            throw new ProtocolException(what + ": unsupported protocol_version " + v + " (this reader speaks 1)");
        }
    }

    private static boolean isAsciiSpace(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == 0x0B;
    }

    static String firstLine(String s) {
        if (s == null) {
            return "no detail";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
