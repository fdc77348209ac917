package dev.stitch.relay;

import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** Which headers a relay passes on, and the {@code Connection} header of its answers (RFC 9110 §7.6.1). */
public final class RelayHeaders {
    /** Hop-by-hop headers: they describe one connection and never cross a relay. */
    public static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");

    private static final Set<String> LENGTH = Set.of("content-length");

    private RelayHeaders() {
    }

    /**
     * Copies headers minus hop-by-hop ones, those named by {@code Connection}, and the ones in {@code skip}
     * (lower case).
     */
    public static void copy(HttpHeaders from, HttpHeaders to, Set<String> skip) {
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

    /**
     * The head of a response relayed chunk by chunk: the upstream's status and end-to-end headers. The upstream's
     * length is kept only when the relay adds nothing after the body; otherwise an HTTP/1.1 client gets chunked
     * framing, and an HTTP/1.0 one a body that ends with the connection (the caller then closes it).
     *
     * @param upstreamHead the upstream's response head
     * @param bodyGrows    whether bytes or trailers follow the upstream's body
     * @param trailer      the trailer field names announced, or null for none
     */
    public static HttpResponse relayedHead(HttpResponse upstreamHead, boolean bodyGrows, String trailer,
                                           boolean keepAlive, boolean http11) {
        HttpResponse out = new DefaultHttpResponse(HttpVersion.HTTP_1_1, upstreamHead.status());
        copy(upstreamHead.headers(), out.headers(), LENGTH);
        String length = upstreamHead.headers().get(HttpHeaderNames.CONTENT_LENGTH);
        int status = upstreamHead.status().code();
        if (status == 204 || status == 304) {
            out.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
        } else if (length != null && !bodyGrows) {
            out.headers().set(HttpHeaderNames.CONTENT_LENGTH, length);
        } else if (http11) {
            out.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            if (trailer != null) {
                out.headers().set(HttpHeaderNames.TRAILER, trailer);
            }
        }
        connection(out, keepAlive, http11);
        return out;
    }

    /** Whether a request's {@code TE} accepts trailers, so a stream may end with the end-version trailer. */
    public static boolean acceptsTrailers(HttpHeaders requestHeaders) {
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

    /** Says {@code close} when the connection ends after this response, {@code keep-alive} to an HTTP/1.0 client that keeps it. */
    public static void connection(HttpResponse r, boolean keepAlive, boolean http11) {
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (!http11) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
    }
}
