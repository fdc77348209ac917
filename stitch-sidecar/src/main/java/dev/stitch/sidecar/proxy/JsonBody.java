package dev.stitch.sidecar.proxy;

import java.io.IOException;
import java.util.Locale;

/**
 * A message body read as JSON when its {@code Content-Type} says so (docs/protocol/sidecar-http.md §4.1):
 * a top-level object opens a {@link JsonObjectEditor}, any other document is only validated.
 * Requests and engine responses are read through {@link #read(String, byte[])} alone, so the rules
 * for recognising and decoding a JSON body change in one place.
 *
 * @param kind   the top-level kind of the document
 * @param object the editor of a top-level object; null for arrays and scalars
 */
record JsonBody(JsonObjectEditor.Kind kind, JsonObjectEditor object) {

    /**
     * Reads a body declared as {@code application/json}.
     *
     * @return null when the body is empty or not declared as JSON (it then travels as raw bytes)
     * @throws IOException when the body is declared as JSON but is not exactly one JSON document
     */
    static JsonBody read(String contentType, byte[] bytes) throws IOException {
        if (bytes.length == 0 || !isJson(contentType)) {
            return null;
        }
        return parse(BodyCharset.utf8(contentType, bytes));
    }

    /**
     * Reads the body of a versioned route: SGLang parses such a body as JSON whatever its
     * Content-Type says, so the constraint is read the same way, and a body that is not one JSON
     * document in a Unicode encoding is refused rather than forwarded unconstrained
     * (docs/protocol/sidecar-http.md §4.1). Arrays and scalars cannot carry a constraint (§4.2).
     *
     * @return the document, or null for an empty body
     * @throws IOException when the body is not exactly one JSON document in a Unicode encoding
     */
    static JsonBody readVersioned(String contentType, byte[] bytes) throws IOException {
        if (bytes.length == 0) {
            return null;
        }
        return parse(BodyCharset.utf8(contentType, bytes));
    }

    private static JsonBody parse(byte[] utf8) throws IOException {
        if (firstNonBlank(utf8) == '{') {
            return new JsonBody(JsonObjectEditor.Kind.OBJECT, JsonObjectEditor.parse(utf8));
        }
        return new JsonBody(JsonObjectEditor.validate(utf8), null);
    }

    /** Whether a Content-Type names {@code application/json} (case-insensitive, parameters ignored). */
    static boolean isJson(String contentType) {
        return "application/json".equals(mediaType(contentType));
    }

    /** The lower-cased media type of a Content-Type value, without parameters; "" when absent. */
    static String mediaType(String contentType) {
        if (contentType == null) {
            return "";
        }
        int semi = contentType.indexOf(';');
        String type = semi < 0 ? contentType : contentType.substring(0, semi);
        return type.trim().toLowerCase(Locale.ROOT);
    }

    /** The first line of a parser message, for error bodies that must stay one line. */
    static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }

    private static byte firstNonBlank(byte[] b) {
        for (byte x : b) {
            if (x != ' ' && x != '\t' && x != '\r' && x != '\n') {
                return x;
            }
        }
        return 0;
    }
}
