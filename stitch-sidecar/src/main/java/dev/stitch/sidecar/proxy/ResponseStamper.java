package dev.stitch.sidecar.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/**
 * Stamps an admitted versioned response with the versions that served it (docs/protocol/sidecar-http.md §4.5, 4.6): the version headers, the version members of a JSON body, and the closing SSE comment
 * of an event stream. A body whose engine reports its own {@code weight_version} is stamped only when
 * that label names a version the sidecar served during the request; otherwise the stamp would be false
 * ({@link LabelMismatch}). Plain Java over header setters and body bytes; the relay decides when each
 * stamp goes out.
 */
final class ResponseStamper {
    static final String HEADER_START = "x-stitch-weight-version-start";
    static final String HEADER_END = "x-stitch-weight-version-end";
    static final String HEADER_RUN = "x-stitch-run-id";
    private static final String EVENT_STREAM = "text/event-stream";
    static final ObjectMapper JSON = new ObjectMapper(JsonObjectEditor.FACTORY);

    /**
     * The engine labels the response with weights the sidecar did not commit for the admitted version:
     * it restarted or was reloaded behind the sidecar's back (sync-and-engines.md 6.5).
     */
    static final class LabelMismatch extends IOException {
        private static final long serialVersionUID = 1L;

        LabelMismatch(String message) {
            super(message);
        }
    }

    private final boolean generate;
    private final long startVersion;
    private final String runId;

    /**
     * A stamper for one admitted request.
     *
     * @param route        the route the request came in on; {@code generate} nests its stamps in {@code meta_info}
     * @param startVersion the version admission served
     * @param runId        the run admission served, or null
     */
    ResponseStamper(String route, long startVersion, String runId) {
        this.generate = route.equals("generate");
        this.startVersion = startVersion;
        this.runId = runId;
    }

    /** Whether a {@code Content-Type} names an SSE stream. */
    static boolean isEventStream(String contentType) {
        return JsonBody.mediaType(contentType).equals(EVENT_STREAM);
    }

    /**
     * Whether the relay holds the whole body back so that its headers can carry the end version: a
     * JSON body (which is also stamped), or any other body of declared size that is not an SSE stream.
     *
     * @param sized whether the engine's response declares a {@code Content-Length}
     */
    static boolean buffersWholeBody(String contentType, boolean sized) {
        String type = JsonBody.mediaType(contentType);
        return type.equals("application/json") || (sized && !type.equals(EVENT_STREAM));
    }

    /**
     * Sets the version headers: start always, end only when known before the first byte goes out,
     * the run when there is one.
     *
     * @param set  a header setter that replaces any value of the same name
     * @param end  the end version, or null for a response that streams
     */
    void stampHeaders(BiConsumer<String, String> set, Long end) {
        set.accept(HEADER_START, Long.toString(startVersion));
        if (end != null) {
            set.accept(HEADER_END, Long.toString(end));
        }
        if (runId != null) {
            set.accept(HEADER_RUN, runId);
        }
    }

    /**
     * Whether the engine's own label names a version this response may be stamped with: one the sidecar
     * committed between admission and {@code end} (an in_place commit may land while a request runs). The
     * sidecar labels every version it commits with its decimal form; the base also goes by the boot label
     * {@code "default"} of an engine nobody has reloaded.
     *
     * @param end the end version, or null while a stream is still running
     */
    boolean labelAgrees(String label, Long end) {
        if (startVersion == 0 && "default".equals(label)) {
            return true;
        }
        long v;
        try {
            v = Long.parseLong(label);
        } catch (NumberFormatException e) {
            return false;
        }
        return v >= startVersion && (end == null || v <= end);
    }

    /** Throws when {@code label} (null: the engine reports none) contradicts the stamp. */
    void requireAgreement(String label, Long end) throws LabelMismatch {
        if (label != null && !labelAgrees(label, end)) {
            throw new LabelMismatch("the engine labels its response weight_version " + label + " where the sidecar "
                    + "admitted it at version " + startVersion + (end == null || end == startVersion ? "" : ".." + end));
        }
    }

    /**
     * A complete engine body with its version members added. Bodies that are empty, not declared as
     * JSON, arrays or scalars, and {@code generate} bodies whose {@code meta_info} is not an object
     * come back unchanged (the same array).
     *
     * @throws LabelMismatch when the engine's own {@code weight_version} (in {@code meta_info}, in the
     *                       OpenAI {@code metadata}, or in any element of a batch) contradicts the stamp
     * @throws IOException   when the body is declared as JSON but does not parse
     */
    byte[] stampBody(String contentType, byte[] body, long end) throws IOException {
        JsonBody json = JsonBody.read(contentType, body);
        if (json == null) {
            return body;
        }
        if (json.object() == null) {
            if (json.kind() == JsonObjectEditor.Kind.ARRAY) {
                for (JsonNode element : JSON.readTree(body)) {
                    requireAgreement(labelIn(element.path("meta_info")), end);
                    requireAgreement(labelIn(element.path("metadata")), end);
                }
            }
            return body;
        }
        JsonObjectEditor top = json.object();
        requireAgreement(label(top, "metadata"), end);
        if (!generate) {
            requireAgreement(label(top, "meta_info"), end);
            top.put("weight_version_start", JsonObjectEditor.number(startVersion));
            top.put("weight_version_end", JsonObjectEditor.number(end));
            return top.toBytes();
        }
        JsonObjectEditor.Member meta = top.member("meta_info");
        if (meta == null) {
            String obj = "{\"weight_version\":\"" + startVersion + "\",\"weight_version_start\":" + startVersion
                    + ",\"weight_version_end\":" + end + "}";
            top.append("meta_info", obj.getBytes(StandardCharsets.US_ASCII));
        } else if (top.firstByte(meta) == '{') {
            JsonObjectEditor inner = JsonObjectEditor.parse(top.rawValue(meta));
            requireAgreement(label(inner), end);
            // The engine's own label is overwritten with the string form of start (docs/protocol/sidecar-http.md §4.5).
            inner.put("weight_version", JsonObjectEditor.quote(Long.toString(startVersion)));
            inner.put("weight_version_start", JsonObjectEditor.number(startVersion));
            inner.put("weight_version_end", JsonObjectEditor.number(end));
            top.put("meta_info", inner.toBytes());
        } else {
            return body;
        }
        return top.toBytes();
    }

    /** The {@code weight_version} inside the object member {@code name} of {@code top}, or null. */
    private static String label(JsonObjectEditor top, String name) throws IOException {
        JsonObjectEditor.Member m = top.member(name);
        return m == null || top.firstByte(m) != '{' ? null : label(JsonObjectEditor.parse(top.rawValue(m)));
    }

    private static String label(JsonObjectEditor object) throws IOException {
        JsonObjectEditor.Member m = object.member("weight_version");
        return m == null ? null : labelValue(JSON.readTree(object.rawValue(m)));
    }

    /** The engine's label in a parsed {@code meta_info} or {@code metadata} object; null when there is none. */
    static String labelIn(JsonNode container) {
        return container.isObject() ? labelValue(container.get("weight_version")) : null;
    }

    /** SGLang writes its label as a string; a number is read as its decimal form; anything else is no label. */
    private static String labelValue(JsonNode v) {
        return v == null || !(v.isTextual() || v.isIntegralNumber()) ? null : v.asText();
    }

    /**
     * The SSE comment that closes a stamped event stream, written after the engine's last byte:
     * {@code : x-stitch-weight-version-end=<end>} and a blank line. The engine's chunks themselves
     * are relayed untouched, wherever their boundaries fall.
     */
    static byte[] streamEndComment(long end) {
        return (": " + HEADER_END + "=" + end + "\n\n").getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The SSE event that ends a stream whose engine label turned out to contradict its start stamp, in
     * place of the end comment: {@code data: <error body>} and a blank line.
     */
    static byte[] streamErrorEvent(byte[] errorBody) {
        byte[] prefix = "data: ".getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[prefix.length + errorBody.length + 2];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        System.arraycopy(errorBody, 0, out, prefix.length, errorBody.length);
        out[out.length - 2] = '\n';
        out[out.length - 1] = '\n';
        return out;
    }
}
