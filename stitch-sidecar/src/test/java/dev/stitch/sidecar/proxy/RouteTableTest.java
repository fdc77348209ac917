package dev.stitch.sidecar.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Set;
import org.junit.jupiter.api.Test;

/** Route names and kinds of docs/protocol/sidecar-http.md §4.1, from raw request targets. */
class RouteTableTest {
    private final RouteTable table = new RouteTable(ProxyServer.DEFAULT_VERSIONED_ROUTES);

    @Test
    void defaultVersionedRoutesInEverySpelling() {
        for (String target : new String[] {"/generate", "generate", "//generate//", "/generate?stream=1",
                "/generate/?a=b/c", "http://engine:30000/generate", "https://h/generate?x"}) {
            RouteTable.Route r = table.classify(target);
            assertEquals("generate", r.name(), target);
            assertEquals(RouteTable.Kind.VERSIONED, r.kind(), target);
            assertEquals("generate", r.label());
        }
        assertEquals(RouteTable.Kind.VERSIONED, table.classify("/v1/chat/completions").kind());
        assertEquals(RouteTable.Kind.VERSIONED, table.classify("/v1/completions/").kind());
    }

    @Test
    void everySidecarAndBlockedRouteIsRecognised() {
        for (String route : ProxyServer.SIDECAR_ROUTES) {
            RouteTable.Route r = table.classify("/" + route + "?q=1");
            assertEquals(RouteTable.Kind.SIDECAR, r.kind(), route);
            assertEquals(route, r.label());
        }
        for (String route : ProxyServer.BLOCKED_ROUTES) {
            RouteTable.Route r = table.classify("/" + route + "/");
            assertEquals(RouteTable.Kind.BLOCKED, r.kind(), route);
            assertEquals(route, r.label());
        }
    }

    @Test
    void everythingElsePassesThroughUnderTheOtherLabel() {
        for (String target : new String[] {"/", "", "/v1/models", "/generate/extra", "/Generate", "/health/x",
                "http://engine:30000", "/?generate"}) {
            RouteTable.Route r = table.classify(target);
            assertEquals(RouteTable.Kind.PASS_THROUGH, r.kind(), target);
            assertEquals("other", r.label(), target);
        }
        assertEquals("v1/models", table.classify("/v1/models?x=/generate").name());
        assertEquals("", table.classify("http://engine:30000").name());
    }

    @Test
    void configuredRoutesReplaceTheDefaultsButNeverOverrideSidecarOrBlockedRoutes() {
        RouteTable custom = new RouteTable(Set.of("generate", "flush_cache", "health"));
        assertEquals(RouteTable.Kind.VERSIONED, custom.classify("/generate").kind());
        assertEquals(RouteTable.Kind.PASS_THROUGH, custom.classify("/v1/completions").kind());
        assertEquals(RouteTable.Kind.BLOCKED, custom.classify("/flush_cache").kind());
        assertEquals(RouteTable.Kind.SIDECAR, custom.classify("/health").kind());
    }

    @Test
    void configuredNamesAreNormalisedLikeRequestTargets() {
        assertEquals("v1/completions", RouteTable.routeName("  /v1/completions/ "));
        assertEquals("", RouteTable.routeName("///"));
        assertEquals(RouteTable.routeOf("/v1/chat/completions/"), RouteTable.routeName("v1/chat/completions"));
        ProxyServer.Config config = ProxyServer.Config.defaults(java.net.URI.create("http://127.0.0.1:1"))
                .withVersionedRoutes(Set.of("/generate/", " v1/completions", "/"));
        assertEquals(Set.of("generate", "v1/completions"), config.versionedRoutes());
    }
}
