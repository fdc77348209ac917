package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The span-based rewriter keeps every untouched byte: order, lexemes, escapes, whitespace. */
class JsonObjectEditorTest {

    private static JsonObjectEditor parse(String json) throws IOException {
        return JsonObjectEditor.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(JsonObjectEditor e) {
        return new String(e.toBytes(), StandardCharsets.UTF_8);
    }

    @Test
    void untouchedDocumentIsReturnedAsIs() throws IOException {
        byte[] src = "{ \"a\" : -0.0001 , \"b\":\"\\u00e9\\n\" }".getBytes(StandardCharsets.UTF_8);
        assertArrayEquals(src, JsonObjectEditor.parse(src).toBytes());
    }

    @Test
    void removeFirstMiddleLastAndOnly() throws IOException {
        JsonObjectEditor e = parse("{\"weight_version\":{\"x\":[1,2]},\"a\":1e-05,\"b\":2}");
        e.remove("weight_version");
        assertEquals("{\"a\":1e-05,\"b\":2}", text(e));
        e = parse("{\"a\":1,\"weight_version\":7,\"b\":2}");
        e.remove("weight_version");
        assertEquals("{\"a\":1,\"b\":2}", text(e));
        e = parse("{\"a\":1, \"weight_version\":null }");
        e.remove("weight_version");
        assertEquals("{\"a\":1 }", text(e));
        e = parse("{\"weight_version\":1}");
        e.remove("weight_version");
        e.append("rid", JsonObjectEditor.quote("r"));
        assertEquals("{\"rid\":\"r\"}", text(e));
    }

    @Test
    void duplicateTrailingMembersAreAllRemoved() throws IOException {
        JsonObjectEditor e = parse("{\"a\":1,\"w\":2,\"w\":3}");
        e.remove("w");
        assertEquals("{\"a\":1}", text(e));
    }

    @Test
    void putReplacesInPlaceAndAppendsAtTheEnd() throws IOException {
        JsonObjectEditor e = parse("{\"extra_key\":\"k\",\"x\":-0.0001,\"weight_version\":{\"exact_version\":2}}");
        e.remove("weight_version");
        e.append("rid", JsonObjectEditor.quote("abc"));
        e.put("extra_key", JsonObjectEditor.quote("wv2;k"));
        assertEquals("{\"extra_key\":\"wv2;k\",\"x\":-0.0001,\"rid\":\"abc\"}", text(e));
        e = parse("{}");
        e.put("a", JsonObjectEditor.number(1));
        e.put("b", JsonObjectEditor.number(2));
        assertEquals("{\"a\":1,\"b\":2}", text(e));
    }

    @Test
    void malformedInputIsRejected() {
        for (String bad : new String[] {"{\"a\":", "{\"a\":1}x", "{\"a\":1} {}", "[1]", "", "{\"a\" 1}"}) {
            assertThrows(IOException.class, () -> parse(bad), bad);
        }
        assertThrows(IOException.class, () -> JsonObjectEditor.validate("[1,]".getBytes(StandardCharsets.UTF_8)));
        assertThrows(IOException.class, () -> JsonObjectEditor.validate("1 2".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void quoteEscapesControlCharacters() {
        assertEquals("\"a\\\"b\\\\c\\n\\u0001\"", new String(JsonObjectEditor.quote("a\"b\\c\n\u0001"), StandardCharsets.UTF_8));
    }

    @Test
    void ridsAre32LowercaseHex() {
        for (int i = 0; i < 100; i++) {
            String rid = RequestRewrite.newRid();
            assertEquals(32, rid.length());
            assertEquals(rid, rid.toLowerCase());
            assertEquals(true, rid.matches("[0-9a-f]{32}"));
        }
    }
}
