package dev.stitch.sidecar.proxy;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/** A scriptable upstream for proxy tests: records each request and answers with the current script. */
final class StubEngine implements AutoCloseable {
    /** One request as the engine received it. */
    record Seen(String method, String uri, Map<String, List<String>> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        String header(String name) {
            List<String> v = headers.get(name.toLowerCase());
            return v == null ? null : v.getFirst();
        }

        String route() {
            return RouteTable.routeOf(uri);
        }
    }

    final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final EventLoopGroup group = EventLoops.group(1, "stub-engine");
    private final Channel server;
    volatile BiConsumer<ChannelHandlerContext, FullHttpRequest> script = (ctx, req) ->
            ctx.writeAndFlush(json(200, "{\"text\":\"ok\",\"meta_info\":{\"finish_reason\":{\"type\":\"length\"}}}"));

    StubEngine() throws InterruptedException {
        server = new ServerBootstrap().group(group).channel(EventLoops.serverChannel())
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(1 << 20),
                                new SimpleChannelInboundHandler<FullHttpRequest>() {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
                                        Map<String, List<String>> h = new java.util.LinkedHashMap<>();
                                        req.headers().forEach(e -> h.computeIfAbsent(e.getKey().toLowerCase(), k -> new ArrayList<>()).add(e.getValue()));
                                        byte[] body = new byte[req.content().readableBytes()];
                                        req.content().getBytes(req.content().readerIndex(), body);
                                        seen.add(new Seen(req.method().name(), req.uri(), h, body));
                                        script.accept(ctx, req);
                                    }
                                });
                    }
                }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    List<Seen> seen(String route) {
        return seen.stream().filter(s -> s.route().equals(route)).toList();
    }

    static FullHttpResponse json(int status, String body) {
        return response(status, "application/json", body);
    }

    static FullHttpResponse response(int status, String contentType, String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status),
                Unpooled.wrappedBuffer(b));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, b.length);
        return r;
    }

    @Override
    public void close() {
        server.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).awaitUninterruptibly();
    }
}
