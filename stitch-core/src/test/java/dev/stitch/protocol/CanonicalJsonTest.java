package dev.stitch.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CanonicalJsonTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Expected strings are Python 3.11's repr(float). */
    @Test
    void floatsLikePythonRepr() {
        assertEquals("1700000001.0", CanonicalJson.formatDouble(1700000001.0));
        assertEquals("1795267281.7295346", CanonicalJson.formatDouble(1795267281.7295346));
        assertEquals("1700000003.25", CanonicalJson.formatDouble(1700000003.25));
        assertEquals("1700000001.5", CanonicalJson.formatDouble(1700000001.5));
        assertEquals("0.0", CanonicalJson.formatDouble(0.0));
        assertEquals("-0.0", CanonicalJson.formatDouble(-0.0));
        assertEquals("0.1", CanonicalJson.formatDouble(0.1));
        assertEquals("0.30000000000000004", CanonicalJson.formatDouble(0.1 + 0.2));
        assertEquals("0.0001", CanonicalJson.formatDouble(1e-4));
        assertEquals("1e-05", CanonicalJson.formatDouble(1e-5));
        assertEquals("-1.5e-07", CanonicalJson.formatDouble(-1.5e-7));
        assertEquals("1234567890123456.0", CanonicalJson.formatDouble(1234567890123456.0));
        assertEquals("1e+16", CanonicalJson.formatDouble(1e16));
        assertEquals("1.2345e+20", CanonicalJson.formatDouble(1.2345e20));
        assertEquals("1.7976931348623157e+308", CanonicalJson.formatDouble(Double.MAX_VALUE));
        assertEquals("5e-324", CanonicalJson.formatDouble(Double.MIN_VALUE));
        assertEquals("100.0", CanonicalJson.formatDouble(100.0));
        assertEquals("123.456", CanonicalJson.formatDouble(123.456));
        assertThrows(IllegalArgumentException.class, () -> CanonicalJson.formatDouble(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> CanonicalJson.formatDouble(Double.POSITIVE_INFINITY));
    }

    /** Whatever the layout, the text must read back as the same double. */
    @Test
    void floatsRoundTrip() {
        SplittableRandom r = new SplittableRandom(42);
        for (int i = 0; i < 20000; i++) {
            double d = Double.longBitsToDouble(r.nextLong());
            if (!Double.isFinite(d)) {
                continue;
            }
            String s = CanonicalJson.formatDouble(d);
            assertEquals(d, Double.parseDouble(s), s);
        }
    }

    @Test
    void objectsSortedAndSpaced() throws IOException {
        String in = "{\"b\": 1, \"a\": [true, null, \"x\"], \"\u00e9\": {\"z\": 1.5, \"y\": -2}, \"B\": \"\"}";
        assertEquals("{\"B\": \"\", \"a\": [true, null, \"x\"], \"b\": 1, \"\\u00e9\": {\"y\": -2, \"z\": 1.5}}\n",
                new String(CanonicalJson.toBytes(JSON.readTree(in)), StandardCharsets.US_ASCII));
        assertEquals("{}", CanonicalJson.toText(JSON.readTree("{}")));
        assertEquals("[]", CanonicalJson.toText(JSON.readTree("[]")));
        assertEquals("123456789012345678901234567890", CanonicalJson.toText(JSON.readTree("123456789012345678901234567890")));
    }

    /** json.dumps(ensure_ascii=True) escapes. */
    @Test
    void stringEscapes() {
        StringBuilder sb = new StringBuilder();
        CanonicalJson.appendString(sb, "a\"b\\c/d\n\r\t\b\f\u0001\u007f\u00ff\u20ac\uD83D\uDE00");
        assertEquals("\"a\\\"b\\\\c/d\\n\\r\\t\\b\\f\\u0001\\u007f\\u00ff\\u20ac\\ud83d\\ude00\"", sb.toString());
    }

    /** Python sorts str keys by code point; UTF-16 order differs above U+FFFF. */
    @Test
    void keysSortedByCodePoint() throws IOException {
        String in = "{\"\uFF5E\": 1, \"\uD83D\uDE00\": 2}";
        assertEquals("{\"\\uff5e\": 1, \"\\ud83d\\ude00\": 2}", CanonicalJson.toText(JSON.readTree(in)));
    }
}
