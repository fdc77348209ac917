package dev.stitch.sidecar.proxy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/**
 * Stamps an admitted versioned response with the versions that served it (board-and-sidecar.md
 * 4.5, 4.6): the version headers, the version members of a JSON body, and the closing SSE comment
 * of an event stream. Plain Java over header setters and body bytes; the relay decides when each
 * stamp goes out.
 */
final class ResponseStamper {
    static final String HEADER_START = "x-stitch-weight-version-start";
    static final String HEADER_END = "x-stitch-weight-version-end";
    static final String HEADER_RUN = "x-stitch-run-id";
    private static final String EVENT_STREAM = "text/event-stream";

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
     * A complete engine body with its version members added. Bodies that are empty, not declared as
     * JSON, arrays or scalars, and {@code generate} bodies whose {@code meta_info} is not an object
     * come back unchanged (the same array).
     *
     * @throws IOException when the body is declared as JSON but does not parse
     */
    byte[] stampBody(String contentType, byte[] body, long end) throws IOException {
        JsonBody json = JsonBody.read(contentType, body);
        if (json == null || json.object() == null) {
            return body;
        }
        JsonObjectEditor top = json.object();
        if (!generate) {
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
            // The engine's own label is overwritten with the string form of start (board-and-sidecar.md 4.5).
            inner.put("weight_version", JsonObjectEditor.quote(Long.toString(startVersion)));
            inner.put("weight_version_start", JsonObjectEditor.number(startVersion));
            inner.put("weight_version_end", JsonObjectEditor.number(end));
            top.put("meta_info", inner.toBytes());
        } else {
            return body;
        }
        return top.toBytes();
    }

    /**
     * The SSE comment that closes a stamped event stream, written after the engine's last byte:
     * {@code : x-stitch-weight-version-end=<end>} and a blank line. The engine's chunks themselves
     * are relayed untouched, wherever their boundaries fall.
     */
    static byte[] streamEndComment(long end) {
        return (": " + HEADER_END + "=" + end + "\n\n").getBytes(StandardCharsets.US_ASCII);
    }
}
