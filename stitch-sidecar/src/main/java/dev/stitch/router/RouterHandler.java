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
 * because the next one is not started until the reply ended (auto-read is off while a request is open, and
 * pipelined requests already decoded wait in {@code pending}).
 */
final class RouterHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final RouterRoutes routes;
    /** Event-loop state: a request is being answered, and the pipelined ones behind it. */
    private boolean busy;
    private final java.util.ArrayDeque<Runnable> pending = new java.util.ArrayDeque<>();

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
        Reply reply = new Reply(ctx, HttpUtil.isKeepAlive(msg), () -> next(ctx));
        ctx.channel().config().setAutoRead(false);
        Runnable task = () -> Thread.ofVirtual().name("stitch-router-request").start(() -> {
            try {
                routes.handle(request, reply);
            } catch (RuntimeException e) {
                reply.abort();
            }
        });
        // Pipelined requests already in the read buffer decode even with auto-read off: they wait their turn so
        // responses leave in request order.
        if (busy) {
            pending.add(task);
        } else {
            busy = true;
            task.run();
        }
    }

    /** Runs on the event loop once a response has been written. */
    private void next(ChannelHandlerContext ctx) {
        Runnable task = pending.poll();
        if (task != null) {
            task.run();
            return;
        }
        busy = false;
        ctx.channel().config().setAutoRead(true);
        ctx.read();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    /** Writes one response: whole, or head then chunks as they arrive from the sidecar. */
    static final class Reply {
        private final ChannelHandlerContext ctx;
        private final boolean keepAlive;
        private final Runnable done;

        Reply(ChannelHandlerContext ctx, boolean keepAlive, Runnable done) {
            this.ctx = ctx;
            this.keepAlive = keepAlive;
            this.done = done;
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
                written.addListener(f -> done.run());
            } else {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
