package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Fuzzes {@link RouteTable#classify}: any request target is classified without an exception, no
 * spelling of a blocked route gets through as another kind, and the path sent to the engine classifies
 * exactly as the target did (the engine sees what was checked; docs/protocol/sidecar-http.md §4.1).
 */
class RouteTableFuzzTest {

    private static final RouteTable TABLE = new RouteTable(ProxyServer.DEFAULT_VERSIONED_ROUTES);

    @FuzzTest
    void routeTable(byte[] input) {
        String target = new String(input, StandardCharsets.ISO_8859_1);
        RouteTable.Route route = TABLE.classify(target);
        assertNotNull(route.kind());
        if (route.kind() == RouteTable.Kind.MALFORMED) {
            assertNotNull(route.why());
            return;
        }
        if (route.kind() != RouteTable.Kind.BLOCKED) {
            assertFalse(ProxyServer.BLOCKED_ROUTES.contains(route.name().toLowerCase(Locale.ROOT)),
                    "blocked route " + route.name() + " classified " + route.kind());
        }
        String forwarded = route.forwardTarget(target);
        RouteTable.Route again = TABLE.classify(forwarded);
        assertEquals(route.name(), again.name(), "the engine would see another route: " + forwarded);
        assertEquals(route.kind(), again.kind(), forwarded);
    }
}
