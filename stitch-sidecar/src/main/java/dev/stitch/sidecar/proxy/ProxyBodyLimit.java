package dev.stitch.sidecar.proxy;

import dev.stitch.protocol.ProxyErrors;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * Collects a request body up to {@code max_request_body_bytes}; a larger one is answered 413
 * {@code RequestTooLarge} and the connection closed, so nothing of it is forwarded.
 */
final class ProxyBodyLimit extends HttpObjectAggregator {
    private final ProxyContext context;

    ProxyBodyLimit(ProxyContext context) {
        super((int) Math.min(Integer.MAX_VALUE - 8, context.config.maxRequestBodyBytes()));
        this.context = context;
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
        String routeLabel = oversized instanceof HttpRequest r ? context.routes.classify(r.uri()).label() : "other";
        context.stats.request(routeLabel, 413);
        context.stats.rejection("RequestTooLarge");
        FullHttpResponse resp = ProxyMessages.jsonResponse(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                ProxyErrors.requestTooLarge(context.config.maxRequestBodyBytes()), false);
        resp.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(resp).addListener(ChannelFutureListener.CLOSE);
    }
}
