package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ExtraKey;
import dev.stitch.protocol.VersionConstraint;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A request on a versioned route that passed validation and waits for admission: its constraint,
 * the rids to abort it by, and the body to forward once the start version is known
 * (docs/protocol/sidecar-http.md §4.3). Object bodies already have {@code weight_version} removed and a
 * {@code rid} added where it was missing; array and non-JSON bodies are forwarded unchanged.
 */
final class VersionedRequest {
    private final VersionConstraint constraint;
    private final List<String> rids;
    private final byte[] body;
    private final JsonObjectEditor object;
    private final ExtraKey.UserKey userKey;
    private byte[] forwarded;

    private VersionedRequest(VersionConstraint constraint, List<String> rids, byte[] body, JsonObjectEditor object,
                             ExtraKey.UserKey userKey) {
        this.constraint = constraint;
        this.rids = rids;
        this.body = body;
        this.object = object;
        this.userKey = userKey;
    }

    /** A body that is not a JSON object: admitted unconstrained and forwarded byte for byte (docs/protocol/sidecar-http.md §4.2). */
    static VersionedRequest unconstrained(byte[] body) {
        return new VersionedRequest(VersionConstraint.NONE, List.of(), body, null, null);
    }

    /** An object body already stripped of {@code weight_version} and carrying a {@code rid}. */
    static VersionedRequest ofObject(VersionConstraint constraint, List<String> rids, JsonObjectEditor object,
                                     ExtraKey.UserKey userKey) {
        return new VersionedRequest(constraint, List.copyOf(rids), null, object, userKey);
    }

    /** The constraint admission evaluates. */
    VersionConstraint constraint() {
        return constraint;
    }

    /** The rids the engine knows this request by, for {@code /abort_request}; empty when the body has none. */
    List<String> rids() {
        return rids;
    }

    /**
     * The body to forward once admitted at {@code startVersion}: an object body gets the composed
     * {@code extra_key} (docs/protocol/sidecar-http.md §4.3 step 3), any other body is unchanged. A request
     * is admitted once, so the first call fixes the body.
     *
     * @param runId the current run, or null
     */
    byte[] forwardedBody(long startVersion, String runId) {
        if (object == null) {
            return body;
        }
        if (forwarded == null) {
            byte[] composed = userKey.compose(startVersion, runId).toString().getBytes(StandardCharsets.UTF_8);
            object.put("extra_key", composed);
            forwarded = object.toBytes();
        }
        return forwarded;
    }
}
