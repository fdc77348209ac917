package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.sidecar.proxy.SidecarEndpoints.EndpointResponse;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The HTTP messages the proxy builds: the request forwarded to the engine, the relayed or stamped
 * response heads, control-plane and error answers, and their framing headers
 * (docs/protocol/sidecar-http.md §4.3, 4.5–4.7).
 */
final class ProxyMessages {
    private static final Set<String> HOP_BY_HOP = Set.copyOf(ProxyServer.hopByHop());
    private static final Set<String> REQUEST_SKIP = Set.of("host", "content-length", "expect");
    private static final Set<String> RESPONSE_SKIP = Set.of("content-length");

    private ProxyMessages() {
    }

    /**
     * The request to the engine: the client's method, target (under the engine's base path) and
     * end-to-end headers, with the engine's {@code Host} and the length of {@code body}.
     */
    static FullHttpRequest upstreamRequest(String method, String uri, HttpHeaders clientHeaders, byte[] body,
                                           UpstreamPool pool) {
        FullHttpRequest out = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.valueOf(method),
                pool.basePath() + (uri.startsWith("/") ? uri : "/" + uri), Unpooled.wrappedBuffer(body));
        copyHeaders(clientHeaders, out.headers(), REQUEST_SKIP);
        out.headers().set(HttpHeaderNames.HOST, pool.hostHeader());
        HttpUtil.setContentLength(out, body.length);
        return out;
    }

    /**
     * The head of a response relayed chunk by chunk. The engine's length is kept only when the
     * proxy adds nothing after the body; otherwise an HTTP/1.1 client gets chunked framing.
     *
     * @param stamper       stamps the start version; null on unversioned routes
     * @param appendComment whether the SSE end comment follows the engine's last byte
     * @param trailer       whether the end-version trailer follows
     */
    static HttpResponse streamHead(HttpResponse engineHead, ResponseStamper stamper, boolean appendComment,
                                   boolean trailer, boolean keepAlive, boolean http11) {
        HttpResponse out = new DefaultHttpResponse(HttpVersion.HTTP_1_1, engineHead.status());
        copyHeaders(engineHead.headers(), out.headers(), RESPONSE_SKIP);
        String length = engineHead.headers().get(HttpHeaderNames.CONTENT_LENGTH);
        if (stamper != null) {
            stamper.stampHeaders((name, value) -> out.headers().set(name, value), null);
        }
        int status = engineHead.status().code();
        if (status == 204 || status == 304) {
            out.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
        } else if (length != null && !appendComment && !trailer) {
            out.headers().set(HttpHeaderNames.CONTENT_LENGTH, length);
        } else if (http11) {
            out.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            if (trailer) {
                out.headers().set(HttpHeaderNames.TRAILER, ResponseStamper.HEADER_END);
            }
        }
        connectionHeader(out, keepAlive, http11);
        return out;
    }

    /** A complete engine response with its (stamped) body, the engine's headers and all version headers. */
    static FullHttpResponse bufferedResponse(HttpResponse engineHead, byte[] body, ResponseStamper stamper, long end) {
        FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, engineHead.status(),
                Unpooled.wrappedBuffer(body));
        copyHeaders(engineHead.headers(), out.headers(), RESPONSE_SKIP);
        stamper.stampHeaders((name, value) -> out.headers().set(name, value), end);
        out.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        return out;
    }

    /** The control plane's answer as an HTTP response. */
    static FullHttpResponse endpointResponse(EndpointResponse resp) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(resp.status()), Unpooled.wrappedBuffer(resp.body()));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, resp.contentType());
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, resp.body().length);
        return r;
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

    /** Says {@code close} when the connection ends after this response, {@code keep-alive} to an HTTP/1.0 client that keeps it. */
    static void connectionHeader(HttpResponse r, boolean keepAlive, boolean http11) {
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (!http11) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
    }

    /** Whether a request's {@code TE} accepts trailers, so a stream may end with the end-version trailer. */
    static boolean acceptsTrailers(HttpHeaders requestHeaders) {
        for (String te : requestHeaders.getAll(HttpHeaderNames.TE)) {
            for (String token : te.split(",")) {
                String t = token.trim().toLowerCase(Locale.ROOT);
                int semi = t.indexOf(';');
                if ((semi < 0 ? t : t.substring(0, semi).trim()).equals("trailers")) {
                    return true;
                }
            }
        }
        return false;
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
}
