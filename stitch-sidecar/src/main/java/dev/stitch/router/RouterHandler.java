package dev.stitch.router;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
import java.util.Map;

/**
 * The Netty end of one client connection. The aggregated request is copied out of Netty's buffers and handed to
 * a virtual thread, because choosing a replica is cheap but forwarding blocks on the sidecar; the answer comes
 * back through {@link Reply}, which writes on the channel. Requests on one connection are answered in order
 * because the next one is not read until the reply ended (auto-read is off while a request is open).
 */
final class RouterHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final RouterRoutes routes;

    RouterHandler(RouterRoutes routes) {
        this.routes = routes;
    }

    /** One request as the routes see it. */
    record Request(String method, String target, HttpHeaders headers, byte[] body) {
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest msg) {
        if (!msg.decoderResult().isSuccess()) {
            ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_REQUEST))
                    .addListener(ChannelFutureListener.CLOSE);
            return;
        }
        byte[] body = new byte[msg.content().readableBytes()];
        msg.content().getBytes(msg.content().readerIndex(), body);
        Request request = new Request(msg.method().name(), msg.uri(), msg.headers().copy(), body);
        Reply reply = new Reply(ctx, HttpUtil.isKeepAlive(msg));
        ctx.channel().config().setAutoRead(false);
        Thread.ofVirtual().name("stitch-router-request").start(() -> {
            try {
                routes.handle(request, reply);
            } catch (RuntimeException e) {
                reply.abort();
            }
        });
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    /** Writes one response: whole, or head then chunks as they arrive from the sidecar. */
    static final class Reply {
        private final ChannelHandlerContext ctx;
        private final boolean keepAlive;

        Reply(ChannelHandlerContext ctx, boolean keepAlive) {
            this.ctx = ctx;
            this.keepAlive = keepAlive;
        }

        /** A complete response. */
        void full(int status, String contentType, byte[] body, Map<String, String> headers) {
            FullHttpResponse rsp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                    Unpooled.wrappedBuffer(body));
            rsp.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
            headers.forEach((k, v) -> rsp.headers().set(k, v));
            HttpUtil.setContentLength(rsp, body.length);
            finish(ctx.writeAndFlush(adjust(rsp)));
        }

        /** The head of a relayed response, sent chunked so its body can follow as it arrives. */
        void head(int status, Map<String, List<String>> headers) {
            HttpResponse rsp = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
            headers.forEach((k, vs) -> rsp.headers().add(k, vs));
            HttpUtil.setTransferEncodingChunked(rsp, true);
            ctx.writeAndFlush(adjust(rsp));
        }

        /** A piece of the relayed body; waits until it is written so a slow client slows the relay. */
        boolean chunk(byte[] bytes, int length) {
            ChannelFuture f = ctx.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer(bytes, 0, length)));
            f.awaitUninterruptibly();
            return f.isSuccess();
        }

        /** The end of the relayed body. */
        void end() {
            finish(ctx.writeAndFlush(new DefaultLastHttpContent()));
        }

        /** The relay broke after the head was sent: all the client can be told is that the connection ends. */
        void abort() {
            ctx.close();
        }

        private HttpResponse adjust(HttpResponse rsp) {
            if (keepAlive) {
                rsp.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
            } else {
                rsp.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            }
            return rsp;
        }

        private void finish(ChannelFuture written) {
            if (keepAlive) {
                written.addListener(f -> {
                    ctx.channel().config().setAutoRead(true);
                    ctx.read();
                });
            } else {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
