package org.spanheap.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FileRegion;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.AbstractReferenceCounted;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.spanheap.SpanHeap;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.WritableByteChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A broadcast over real sockets on 127.0.0.1: a Netty server whose allocator is set as
 * {@code childOption} writes one derived buffer of a single direct buffer to each of several
 * clients, each served by an event loop of its own, so the event loops read the one buffer at
 * the same time. Each client (a plain {@link Socket} on a thread of its own) checks every byte
 * of every round; after shutdown the span heap holds no block.
 *
 * <p>The NIO transport writes a {@code ByteBuf} message through {@code internalNioBuffer}, which
 * a derived buffer answers with a fresh {@code nioBuffer}; a {@link FileRegion} message is
 * written by its own {@code transferTo}, here {@code getBytes} into the socket channel, the path
 * a buffer shared by the derived buffers would corrupt.
 */
class BroadcastTest {

    private static final int CLIENTS = 4;
    private static final int ROUNDS = 8;
    private static final int SIZE = 1 << 20;
    private static final int SOCKET_BUFFER = 8 << 10;
    /** The most a {@link ByteBufRegion} hands the socket in one call. */
    private static final int PIECE = 8 << 10;

    private static byte pattern(int round, int i) {
        return (byte) (i * 29 + (i >>> 8) * 3 + (i >>> 16) + round * 101);
    }

    /** What each client is sent: a derived buffer of the shared one, as a message. */
    enum Message {
        RETAINED_DUPLICATE {
            @Override
            Object of(ByteBuf shared) {
                return shared.retainedDuplicate();
            }
        },
        RETAINED_SLICE {
            @Override
            Object of(ByteBuf shared) {
                return shared.retainedSlice();
            }
        },
        RETAINED_DUPLICATE_IN_A_FILE_REGION {
            @Override
            Object of(ByteBuf shared) {
                return new ByteBufRegion(shared.retainedDuplicate());
            }
        };

        abstract Object of(ByteBuf shared);
    }

    /**
     * A buffer's readable bytes as a {@link FileRegion}: {@code transferTo} is {@code getBytes}
     * into the channel, at most {@code PIECE} bytes a call.
     */
    private static final class ByteBufRegion extends AbstractReferenceCounted implements FileRegion {
        private final ByteBuf buf;
        private final int count;
        private long transferred;

        ByteBufRegion(ByteBuf buf) {
            this.buf = buf;
            this.count = buf.readableBytes();
        }

        @Override
        public long position() {
            return 0;
        }

        @Override
        @Deprecated
        public long transfered() {
            return transferred;
        }

        @Override
        public long transferred() {
            return transferred;
        }

        @Override
        public long count() {
            return count;
        }

        @Override
        public long transferTo(WritableByteChannel target, long position) throws IOException {
            int from = Math.toIntExact(position);
            int n = buf.getBytes(buf.readerIndex() + from, (GatheringByteChannel) target, Math.min(count - from, PIECE));
            transferred += n;
            return n;
        }

        @Override
        protected void deallocate() {
            buf.release();
        }

        @Override
        public FileRegion retain() {
            super.retain();
            return this;
        }

        @Override
        public FileRegion retain(int increment) {
            super.retain(increment);
            return this;
        }

        @Override
        public FileRegion touch() {
            return this;
        }

        @Override
        public FileRegion touch(Object hint) {
            buf.touch(hint);
            return this;
        }
    }

    /** Reads {@code ROUNDS * SIZE} bytes and checks each; returns what went wrong, or null. */
    private static String receiveAll(Socket socket) throws IOException {
        socket.setSoTimeout(60_000);
        InputStream in = socket.getInputStream();
        byte[] chunk = new byte[64 << 10];
        for (int round = 0; round < ROUNDS; round++) {
            for (int at = 0; at < SIZE; ) {
                int n = in.read(chunk, 0, Math.min(chunk.length, SIZE - at));
                if (n < 0) {
                    return "end of stream in round " + round + " at byte " + at;
                }
                for (int i = 0; i < n; i++) {
                    if (chunk[i] != pattern(round, at + i)) {
                        return "round " + round + ", byte " + (at + i) + ": " + chunk[i] + ", expected "
                                + pattern(round, at + i);
                    }
                }
                at += n;
            }
        }
        return null;
    }

    @ParameterizedTest
    @EnumSource(Message.class)
    @SuppressWarnings("deprecation") // NioEventLoopGroup: deprecated in 4.2, the NIO group both 4.1 and 4.2 have
    void everyClientGetsEveryByteOfEveryRoundAndEveryBlockIsFreed(Message message) throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap);
            BlockingQueue<Channel> accepted = new LinkedBlockingQueue<>();
            Queue<String> problems = new ConcurrentLinkedQueue<>();
            EventLoopGroup boss = new NioEventLoopGroup(1);
            EventLoopGroup workers = new NioEventLoopGroup(CLIENTS);
            List<Socket> sockets = new ArrayList<>();
            List<Thread> clients = new ArrayList<>();
            try {
                Channel server = new ServerBootstrap()
                        .group(boss, workers)
                        .channel(NioServerSocketChannel.class)
                        .childOption(ChannelOption.ALLOCATOR, alloc)
                        // small socket buffers: many partial writes, so the event loops' writes overlap
                        .childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER)
                        .childHandler(new ChannelInitializer<SocketChannel>() {
                            @Override
                            protected void initChannel(SocketChannel ch) {
                                ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                        problems.add("server: " + cause);
                                        ctx.close();
                                    }
                                });
                                accepted.add(ch);
                            }
                        })
                        .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
                InetSocketAddress address = (InetSocketAddress) server.localAddress();

                for (int c = 0; c < CLIENTS; c++) {
                    Socket socket = new Socket();
                    socket.setReceiveBufferSize(SOCKET_BUFFER);
                    socket.connect(address, 10_000);
                    sockets.add(socket);
                    clients.add(Thread.ofPlatform().name("client-" + c).start(() -> {
                        try {
                            String problem = receiveAll(socket);
                            if (problem != null) {
                                problems.add(problem);
                            }
                        } catch (IOException e) {
                            problems.add("client: " + e);
                        }
                    }));
                }
                List<Channel> children = new ArrayList<>();
                Set<EventLoop> loops = new HashSet<>();
                for (int c = 0; c < CLIENTS; c++) {
                    Channel child = accepted.poll(10, TimeUnit.SECONDS);
                    assertNotNull(child, "connection " + c + " accepted");
                    assertTrue(child.config().getAllocator() == alloc, "the child channel's allocator");
                    children.add(child);
                    loops.add(child.eventLoop());
                }
                assertEquals(CLIENTS, loops.size(), "each client served by an event loop of its own");

                for (int round = 0; round < ROUNDS; round++) {
                    ByteBuf shared = alloc.directBuffer(SIZE);
                    for (int i = 0; i < SIZE; i++) {
                        shared.writeByte(pattern(round, i));
                    }
                    List<ChannelFuture> writes = new ArrayList<>();
                    for (Channel child : children) {
                        writes.add(child.writeAndFlush(message.of(shared)));
                    }
                    shared.release(); // the derived buffers keep the block until every write is done
                    for (ChannelFuture w : writes) {
                        assertTrue(w.await(60, TimeUnit.SECONDS), "write of round " + round + " finished");
                        if (!w.isSuccess()) {
                            problems.add("write of round " + round + ": " + w.cause());
                        }
                    }
                }
                for (Thread client : clients) {
                    assertTrue(client.join(Duration.ofSeconds(60)), () -> client.getName() + " finished");
                }
                for (Channel child : children) {
                    child.close().sync();
                }
                server.close().sync();
            } finally {
                for (Socket s : sockets) {
                    s.close();
                }
                boss.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                workers.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
            assertTrue(problems.isEmpty(), problems::toString);
            assertEquals(0, alloc.metric().usedDirectMemory(), () -> "direct memory after shutdown: " + alloc);
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks after shutdown: " + heap.stats());
        }
    }
}
