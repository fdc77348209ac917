package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.sync.AdmissionControl;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;

/** What every connection of one {@link ProxyServer} shares: settings, collaborators, counters. */
final class ProxyContext {
    private static final Set<String> HOP_BY_HOP = Set.copyOf(ProxyServer.hopByHop());

    final ProxyServer.Config config;
    final RouteTable routes;
    final AdmissionControl admission;
    final SidecarEndpoints endpoints;
    final ProxyStats stats;
    final UpstreamPool pool;
    final ExecutorService endpointExecutor;

    ProxyContext(ProxyServer.Config config, AdmissionControl admission, SidecarEndpoints endpoints, ProxyStats stats,
                 UpstreamPool pool, ExecutorService endpointExecutor) {
        this.config = config;
        this.routes = new RouteTable(config.versionedRoutes());
        this.admission = admission;
        this.endpoints = endpoints;
        this.stats = stats;
        this.pool = pool;
        this.endpointExecutor = endpointExecutor;
    }

    /**
     * Copies headers minus hop-by-hop ones, those named by {@code Connection}, and the ones in
     * {@code skip} (lower case).
     */
    static void copyHeaders(HttpHeaders from, HttpHeaders to, Set<String> skip) {
        Set<String> named = null;
        for (String c : from.getAll(HttpHeaderNames.CONNECTION)) {
            for (String token : c.split(",")) {
                String t = token.trim().toLowerCase(Locale.ROOT);
                if (!t.isEmpty()) {
                    if (named == null) {
                        named = new HashSet<>();
                    }
                    named.add(t);
                }
            }
        }
        for (Map.Entry<String, String> h : from) {
            String name = h.getKey().toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(name) || skip.contains(name) || (named != null && named.contains(name))) {
                continue;
            }
            to.add(h.getKey(), h.getValue());
        }
    }

    /** A complete JSON error response with the given body; {@code retryAfter} adds {@code Retry-After}. */
    static FullHttpResponse jsonResponse(HttpResponseStatus status, byte[] body, boolean retryAfter) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        if (retryAfter) {
            r.headers().set(HttpHeaderNames.RETRY_AFTER, ProxyErrors.RETRY_AFTER_SECONDS);
        }
        return r;
    }
}
