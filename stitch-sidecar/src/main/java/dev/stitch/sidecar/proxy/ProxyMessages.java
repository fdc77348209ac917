package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import dev.stitch.relay.RelayHeaders;
import dev.stitch.sidecar.proxy.SidecarEndpoints.EndpointResponse;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.Set;

/**
 * The HTTP messages the proxy builds: the request forwarded to the engine, the relayed or stamped
 * response heads, control-plane and error answers, and their framing headers
 * (docs/protocol/sidecar-http.md §4.3, 4.5–4.7).
 */
final class ProxyMessages {
    private static final Set<String> RESPONSE_SKIP = Set.of("content-length");

    private ProxyMessages() {
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
        HttpResponse out = RelayHeaders.relayedHead(engineHead, appendComment || trailer,
                trailer ? ResponseStamper.HEADER_END : null, keepAlive, http11);
        if (stamper != null) {
            stamper.stampHeaders((name, value) -> out.headers().set(name, value), null);
        }
        return out;
    }

    /** A complete engine response with its (stamped) body, the engine's headers and all version headers. */
    static FullHttpResponse bufferedResponse(HttpResponse engineHead, byte[] body, ResponseStamper stamper, long end) {
        FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, engineHead.status(),
                Unpooled.wrappedBuffer(body));
        RelayHeaders.copy(engineHead.headers(), out.headers(), RESPONSE_SKIP);
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

}
