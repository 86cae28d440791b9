package org.spanheap.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Netty HTTP/1.1 server (NIO transport, {@link HttpServerCodec}, {@link HttpObjectAggregator})
 * whose channels all use a {@link SpanHeapByteBufAllocator}, and the JDK's HTTP client: the
 * server answers every POST with the body it received and its CRC32 in a header; the client
 * checks both, byte for byte; after shutdown the span heap holds no block.
 */
class HttpServerTest {

    private static final int MAX_BODY = 2 << 20;
    private static final int[] SIZES = {0, 1, 100, 1000, 8191, 65_535, 65_536, 65_537, 200_000, 1 << 20};

    private static byte[] body(int size, int seed) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (i * 7 + (i >>> 8) + seed);
        }
        return b;
    }

    private static String crc32(byte[] bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes);
        return Long.toHexString(crc.getValue());
    }

    /** Echoes the body; records what it saw, for the test to check on its own thread. */
    private static final class EchoHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
        private final SpanHeapByteBufAllocator alloc;
        private final AtomicInteger requests;
        private final Queue<String> problems;

        EchoHandler(SpanHeapByteBufAllocator alloc, AtomicInteger requests, Queue<String> problems) {
            this.alloc = alloc;
            this.requests = requests;
            this.problems = problems;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            requests.incrementAndGet();
            ByteBuf content = request.content();
            int length = content.readableBytes();
            if (ctx.alloc() != alloc) {
                problems.add("child channel allocator: " + ctx.alloc());
            }
            // The request's bytes were read into buffers of this allocator and are still held.
            if (alloc.metric().usedDirectMemory() < length) {
                problems.add("used direct memory " + alloc.metric().usedDirectMemory() + " < body " + length);
            }
            byte[] bytes = new byte[length];
            content.getBytes(content.readerIndex(), bytes);
            ByteBuf echo = ctx.alloc().directBuffer(length).writeBytes(content);
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, echo);
            HttpUtil.setContentLength(response, length);
            response.headers().set("x-crc32", crc32(bytes));
            if (HttpUtil.isKeepAlive(request)) {
                ctx.writeAndFlush(response);
            } else {
                ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            problems.add(cause.toString());
            ctx.close();
        }
    }

    @Test
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in 4.2, the NIO group both 4.1 and 4.2 have
    void echoServerReturnsEveryBodyByteForByteAndFreesEveryBlock() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap);
            AtomicInteger requests = new AtomicInteger();
            Queue<String> problems = new ConcurrentLinkedQueue<>();
            EventLoopGroup boss = new NioEventLoopGroup(1);
            EventLoopGroup workers = new NioEventLoopGroup(2);
            int expectedRequests = 0;
            try {
                Channel server = new ServerBootstrap()
                        .group(boss, workers)
                        .channel(NioServerSocketChannel.class)
                        .option(ChannelOption.ALLOCATOR, alloc)
                        .childOption(ChannelOption.ALLOCATOR, alloc)
                        .childHandler(new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_BODY),
                                        new EchoHandler(alloc, requests, problems));
                            }
                        })
                        .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
                assertSame(alloc, server.config().getAllocator());
                URI uri = URI.create("http://127.0.0.1:" + ((InetSocketAddress) server.localAddress()).getPort() + "/echo");

                try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(Duration.ofSeconds(10)).build()) {
                    // One after the other on a kept-alive connection...
                    for (int size : SIZES) {
                        byte[] sent = body(size, size);
                        HttpResponse<byte[]> response = client.send(post(uri, sent), HttpResponse.BodyHandlers.ofByteArray());
                        expectedRequests++;
                        check(sent, response);
                    }
                    // ...then all at once, over several connections.
                    List<byte[]> bodies = new ArrayList<>();
                    List<CompletableFuture<HttpResponse<byte[]>>> responses = new ArrayList<>();
                    for (int round = 0; round < 3; round++) {
                        for (int size : SIZES) {
                            byte[] sent = body(size, round * 31 + size);
                            bodies.add(sent);
                            responses.add(client.sendAsync(post(uri, sent), HttpResponse.BodyHandlers.ofByteArray()));
                            expectedRequests++;
                        }
                    }
                    for (int i = 0; i < responses.size(); i++) {
                        check(bodies.get(i), responses.get(i).get(60, TimeUnit.SECONDS));
                    }
                }
                server.close().sync();
            } finally {
                boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
            assertTrue(problems.isEmpty(), problems::toString);
            assertEquals(expectedRequests, requests.get());
            assertEquals(0, alloc.metric().usedDirectMemory(), () -> "direct memory after shutdown: " + alloc);
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks after shutdown: " + heap.stats());
        }
    }

    private static HttpRequest post(URI uri, byte[] body) {
        return HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
    }

    private static void check(byte[] sent, HttpResponse<byte[]> response) {
        assertEquals(200, response.statusCode(), "status for a body of " + sent.length);
        assertEquals(crc32(sent), response.headers().firstValue("x-crc32").orElse("none"), "CRC32 the server computed");
        assertArrayEquals(sent, response.body(), "echo of a body of " + sent.length);
    }
}
