package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertFalse;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.protocol.VersionConstraint;
import java.io.IOException;

/**
 * Fuzzes {@link RequestRewrite#decide} on a versioned route with arbitrary content types and bodies:
 * it always decides (no exception), and a body admitted unconstrained never reaches the engine still
 * carrying a {@code weight_version} that the engine's own JSON reader would find (whatever the
 * encoding; docs/protocol/sidecar-http.md §4.1–4.2).
 */
class RequestRewriteFuzzTest {

    private static final RouteTable TABLE = new RouteTable(ProxyServer.DEFAULT_VERSIONED_ROUTES);
    private static final String[] TYPES = {null, "application/json", "text/plain", "application/json; charset=utf-16",
        "application/json; charset=utf-32le", "application/json; charset=\"UTF-8\""};
    // Jackson's own byte reader detects UTF-8/16/32 by itself, as a lenient engine-side parser would.
    private static final ObjectMapper ENGINE_VIEW = new ObjectMapper();

    @FuzzTest
    void requestRewrite(FuzzedDataProvider data) {
        String type = data.consumeBoolean() ? TYPES[data.consumeInt(0, TYPES.length - 1)] : data.consumeString(40);
        byte[] body = data.consumeRemainingAsBytes();
        RequestRewrite.Decision d = RequestRewrite.decide(TABLE.classify("/generate"), type, body);
        if (d instanceof RequestRewrite.Admit a && a.request().constraint().equals(VersionConstraint.NONE)) {
            byte[] forwarded = a.request().forwardedBody(3, "run");
            JsonNode seen;
            try {
                seen = ENGINE_VIEW.readTree(forwarded);
            } catch (IOException | RuntimeException notJson) {
                return;
            }
            if (seen != null && seen.isObject()) {
                JsonNode wv = seen.get("weight_version");
                assertFalse(wv != null && !wv.isNull(), "forwarded unconstrained with weight_version " + wv);
            }
        }
    }
}
