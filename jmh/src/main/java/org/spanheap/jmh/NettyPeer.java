package org.spanheap.jmh;

import java.lang.foreign.MemorySegment;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;

/**
 * Netty 4.2's pooled and adaptive allocators: {@code directBuffer(size)} and {@code release()}.
 *
 * <p>Default settings, as a Netty user runs them, including leak detection at its default level
 * ({@code SIMPLE}: about one buffer in 128 is tracked). The {@code _NOLEAK} variants set
 * {@code ResourceLeakDetector.setLevel(DISABLED)} first; the level is global, which is safe here
 * because JMH runs every {@code @Param} combination in its own forked JVM.
 */
@SuppressWarnings("restricted") // a segment view of a direct ByteBuf at its address
final class NettyPeer implements Peer {

    private final ByteBufAllocator allocator;

    private NettyPeer(ByteBufAllocator allocator) {
        this.allocator = allocator;
    }

    static NettyPeer pooled(boolean leakDetection) {
        configureLeakDetection(leakDetection);
        return new NettyPeer(PooledByteBufAllocator.DEFAULT);
    }

    static NettyPeer adaptive(boolean leakDetection) {
        configureLeakDetection(leakDetection);
        return new NettyPeer(new AdaptiveByteBufAllocator());
    }

    private static void configureLeakDetection(boolean enabled) {
        if (!enabled) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        }
    }

    ByteBufAllocator allocator() {
        return allocator;
    }

    @Override
    public Object allocate(long size) {
        return allocator.directBuffer(Math.toIntExact(size));
    }

    @Override
    public byte touch(Object block, byte value) {
        ByteBuf b = (ByteBuf) block;
        b.setByte(0, value);
        return b.getByte(0);
    }

    @Override
    public void free(Object block) {
        ((ByteBuf) block).release();
    }

    @Override
    public MemorySegment segment(Object block) {
        ByteBuf b = (ByteBuf) block;
        if (b.hasMemoryAddress()) {
            return MemorySegment.ofAddress(b.memoryAddress()).reinterpret(b.capacity());
        }
        return MemorySegment.ofBuffer(b.internalNioBuffer(0, b.capacity()));
    }
}
