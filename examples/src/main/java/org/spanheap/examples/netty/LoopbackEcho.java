package org.spanheap.examples.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * An echo server and client on loopback, with length-prefixed frames (a 4-byte length, then
 * the payload), both using one {@link ByteBufAllocator}. The client keeps a window of
 * messages in flight, checks every byte of every echo, and completes when all came back.
 *
 * <p>Message {@code i} has {@link #length(int)} bytes, byte {@code j} being
 * {@link #expected(int, int)}; every 1000th message is 20 000 to 60 000 bytes long, so
 * frames span several reads and the decoder's buffer has to grow.
 */
public final class LoopbackEcho implements AutoCloseable {

    private static final int MAX_FRAME = 1 << 16;

    private final EventLoopGroup group;
    private final Channel server;
    private final ByteBufAllocator alloc;

    /** Starts the server on 127.0.0.1, an ephemeral port. */
    public LoopbackEcho(ByteBufAllocator alloc) throws InterruptedException {
        this.alloc = alloc;
        this.group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, alloc)
                .childOption(ChannelOption.ALLOCATOR, alloc)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4),
                                new LengthFieldPrepender(4), new EchoHandler());
                    }
                });
        this.server = b.bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    /** {@return the server's address} */
    public InetSocketAddress address() {
        return (InetSocketAddress) server.localAddress();
    }

    /** {@return the length of message {@code i}} */
    public static int length(int i) {
        if (i % 1000 == 999) {
            return 20_000 + mix(i) % 40_000;
        }
        return 1 + mix(i) % 1024;
    }

    /** {@return byte {@code j} of message {@code i}} */
    public static byte expected(int i, int j) {
        return (byte) (i * 131 + j * 7 + (j >>> 8));
    }

    private static int mix(int i) {
        int h = i * 0x9E3779B9;
        h ^= h >>> 15;
        return h & 0x7fffffff;
    }

    /**
     * Sends {@code count} messages with at most {@code window} unanswered and checks the echoes.
     *
     * @return the bytes echoed (payloads)
     * @throws Exception with the first mismatch, or on timeout
     */
    public long run(int count, int window, long timeoutSeconds) throws Exception {
        Client client = new Client(count, window);
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.ALLOCATOR, alloc)
                .option(ChannelOption.TCP_NODELAY, true)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4),
                                new LengthFieldPrepender(4), client);
                    }
                });
        Channel ch = b.connect(address()).sync().channel();
        try {
            client.done.get(timeoutSeconds, TimeUnit.SECONDS);
        } finally {
            ch.close().sync();
        }
        return client.bytes;
    }

    /** Closes the server and stops the event loops (waits for them; an interrupt ends the wait). */
    @Override
    public void close() {
        try {
            server.close().sync();
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).sync();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Writes every frame back; the frame (a slice of the decoder's buffer) is released by the write. */
    private static final class EchoHandler extends ChannelInboundHandlerAdapter {
        @Override
        public boolean isSharable() {
            return false;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    private static final class Client extends SimpleChannelInboundHandler<ByteBuf> {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final int count;
        final int window;
        int sent;
        int received;
        long bytes;

        Client(int count, int window) {
            this.count = count;
            this.window = window;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            sendMore(ctx);
        }

        private void sendMore(ChannelHandlerContext ctx) {
            boolean any = false;
            while (sent < count && sent - received < window) {
                int i = sent++;
                int len = length(i);
                ByteBuf m = ctx.alloc().directBuffer(len);
                for (int j = 0; j < len; j++) {
                    m.writeByte(expected(i, j));
                }
                ctx.write(m, ctx.voidPromise());
                any = true;
            }
            if (any) {
                ctx.flush();
            }
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            int i = received++;
            int len = length(i);
            if (frame.readableBytes() != len) {
                done.completeExceptionally(new AssertionError(
                        "message " + i + ": " + frame.readableBytes() + " bytes, expected " + len));
                ctx.close();
                return;
            }
            int r = frame.readerIndex();
            for (int j = 0; j < len; j++) {
                byte b = frame.getByte(r + j);
                if (b != expected(i, j)) {
                    done.completeExceptionally(new AssertionError(
                            "message " + i + " byte " + j + ": " + b + ", expected " + expected(i, j)));
                    ctx.close();
                    return;
                }
            }
            bytes += len;
            if (received == count) {
                done.complete(null);
            } else {
                sendMore(ctx);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (!done.isDone()) {
                done.completeExceptionally(new AssertionError("connection closed after " + received + " echoes"));
            }
        }
    }
}
