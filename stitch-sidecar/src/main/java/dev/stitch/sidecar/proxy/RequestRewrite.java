package dev.stitch.sidecar.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.ExtraKey;
import dev.stitch.protocol.ProxyErrors;
import dev.stitch.protocol.VersionConstraint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Decides what the data plane does with one well-formed request before any I/O: answer it with an
 * error, hand it to the control plane, forward it at once, or put it through admission
 * (docs/protocol/sidecar-http.md §4.1–4.3). Plain Java over the route, the {@code Content-Type} and the body
 * bytes, so every request rule is testable without a socket.
 */
final class RequestRewrite {
    private static final ObjectMapper JSON = new ObjectMapper(JsonObjectEditor.FACTORY);

    /** What to do with a request. */
    sealed interface Decision permits Answer, Endpoint, Forward, Admit {
    }

    /**
     * Answer at once with a typed error body, forwarding nothing.
     *
     * @param status        the HTTP status
     * @param rejectionType the error type, also the {@code rejections_total} label
     * @param body          the JSON error body
     */
    record Answer(int status, String rejectionType, byte[] body) implements Decision {
    }

    /** Hand a sidecar-owned route to the control plane, bypassing the gate (docs/protocol/sidecar-http.md §5). */
    record Endpoint(String route) implements Decision {
    }

    /** Forward at once, ungated, with this body (docs/protocol/sidecar-http.md §4.6). */
    record Forward(byte[] body) implements Decision {
    }

    /** Put a versioned request through admission, then forward {@link VersionedRequest#forwardedBody}. */
    record Admit(VersionedRequest request) implements Decision {
    }

    private RequestRewrite() {
    }

    /**
     * Classifies one request.
     *
     * @param route       the classified request target
     * @param contentType the request's {@code Content-Type}, or null
     * @param body        the complete request body
     */
    static Decision decide(RouteTable.Route route, String contentType, byte[] body) {
        switch (route.kind()) {
            case BLOCKED -> {
                return new Answer(403, "RouteBlocked", ProxyErrors.routeBlocked(route.name()));
            }
            case MALFORMED -> {
                return invalidRequest("request path refused: " + route.why());
            }
            case SIDECAR -> {
                return new Endpoint(route.name());
            }
            default -> {
            }
        }
        JsonObjectEditor object;
        try {
            JsonBody json = route.kind() == RouteTable.Kind.VERSIONED
                    ? JsonBody.readVersioned(contentType, body) : JsonBody.read(contentType, body);
            object = json == null ? null : json.object();
        } catch (IOException e) {
            return invalidRequest("malformed JSON body: " + JsonBody.firstLine(e.getMessage()));
        }
        if (route.kind() == RouteTable.Kind.PASS_THROUGH) {
            // docs/protocol/sidecar-http.md §4.6: the constraint is stripped unvalidated and nothing else changes.
            if (object != null && object.member("weight_version") != null) {
                object.remove("weight_version");
                return new Forward(object.toBytes());
            }
            return new Forward(body);
        }
        if (object == null) {
            // An empty body, an array or a scalar: none can carry a constraint (docs/protocol/sidecar-http.md §4.2).
            return new Admit(VersionedRequest.unconstrained(body));
        }
        return versioned(object);
    }

    /** Validates the constraint and {@code extra_key}, strips {@code weight_version}, adds a missing rid. */
    private static Decision versioned(JsonObjectEditor object) {
        VersionConstraint constraint = VersionConstraint.NONE;
        JsonObjectEditor.Member wv = object.member("weight_version");
        if (wv != null) {
            VersionConstraint.ParseResult parsed = VersionConstraint.parse(tree(object.rawValue(wv)));
            if (parsed instanceof VersionConstraint.Invalid inv) {
                return new Answer(400, "InvalidWeightVersion", ProxyErrors.invalidWeightVersion(inv.message()));
            }
            constraint = ((VersionConstraint.Valid) parsed).constraint();
        }
        JsonObjectEditor.Member ek = object.member("extra_key");
        ExtraKey.UserKeyResult user = ExtraKey.user(ek == null ? null : tree(object.rawValue(ek)));
        if (user instanceof ExtraKey.Invalid inv) {
            return invalidRequest(inv.message());
        }
        object.remove("weight_version");
        return new Admit(VersionedRequest.ofObject(constraint, rids(object), object, (ExtraKey.UserKey) user));
    }

    /** The rids of an object body (docs/protocol/sidecar-http.md §4.3 step 2); an absent or null rid gets a fresh one. */
    private static List<String> rids(JsonObjectEditor object) {
        JsonObjectEditor.Member rid = object.member("rid");
        JsonNode ridNode = rid == null ? null : tree(object.rawValue(rid));
        if (ridNode == null || ridNode.isNull()) {
            String fresh = newRid();
            object.put("rid", JsonObjectEditor.quote(fresh));
            return List.of(fresh);
        }
        if (ridNode.isArray()) {
            List<String> list = new ArrayList<>();
            ridNode.forEach(n -> {
                if (!n.isNull()) {
                    list.add(n.isTextual() ? n.textValue() : n.toString());
                }
            });
            return list;
        }
        return List.of(ridNode.isTextual() ? ridNode.textValue() : ridNode.toString());
    }

    private static Answer invalidRequest(String message) {
        return new Answer(400, "InvalidRequest", ProxyErrors.invalidRequest(message));
    }

    /** 32 lowercase hex characters of randomness, like a UUID without dashes (no SecureRandom on the event loop). */
    static String newRid() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        String hi = Long.toHexString(r.nextLong());
        String lo = Long.toHexString(r.nextLong());
        return "0".repeat(16 - hi.length()) + hi + "0".repeat(16 - lo.length()) + lo;
    }

    private static JsonNode tree(byte[] raw) {
        try {
            return JSON.readTree(raw);
        } catch (IOException e) {
            // The editor has already validated the whole document, so a member value always parses.
            throw new IllegalStateException("validated JSON did not parse: " + e.getMessage(), e);
        }
    }
}
