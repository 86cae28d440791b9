package org.spanheap.examples.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.util.internal.CleanableDirectBuffer;
import io.netty.util.internal.PlatformDependent;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A Netty {@link ByteBufAllocator} whose direct buffers are blocks of a {@link SpanHeap}.
 *
 * <p>Netty's pooled allocators keep their own arenas, chunks and thread caches on top of
 * {@code ByteBuffer.allocateDirect}. The span heap already has per-thread caches and
 * size classes, so this allocator simply asks it for a block per buffer and frees the block
 * when the buffer's reference count drops to zero: no pool of its own, no chunk to hold
 * on to, and the memory is visible in {@link SpanHeap#stats()}.
 *
 * <p>A direct buffer is a Netty {@code UnpooledDirectByteBuf} (or its {@code Unsafe}
 * variant, when Netty may use {@code sun.misc.Unsafe}) over
 * {@link MemorySegment#asByteBuffer()} of the block. When the buffer grows
 * ({@link ByteBuf#capacity(int)}, for example when a decoder accumulates), a new block is
 * allocated, the bytes are copied and the old block is freed. Heap buffers are Netty's
 * unpooled heap buffers.
 *
 * {@snippet :
 * SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(SpanHeap.global());
 * ServerBootstrap b = new ServerBootstrap()
 *         .option(ChannelOption.ALLOCATOR, alloc)
 *         .childOption(ChannelOption.ALLOCATOR, alloc);
 * }
 *
 * <p>Blocks are freed by the thread that releases the buffer; the span heap accepts frees
 * from any thread.
 */
public final class SpanHeapByteBufAllocator extends AbstractByteBufAllocator {

    private final SpanHeap heap;
    private final boolean useUnsafe;
    private final UnpooledByteBufAllocator heapBuffers;

    /**
     * Creates an allocator that prefers direct buffers.
     *
     * @param heap where direct buffers come from; the allocator does not close it
     */
    public SpanHeapByteBufAllocator(SpanHeap heap) {
        this(heap, true);
    }

    /**
     * Creates an allocator.
     *
     * @param heap         where direct buffers come from; the allocator does not close it
     * @param preferDirect whether {@link #buffer()} returns direct buffers
     */
    public SpanHeapByteBufAllocator(SpanHeap heap, boolean preferDirect) {
        this(heap, preferDirect, PlatformDependent.hasUnsafe());
    }

    /** For tests: chooses the buffer class ({@code Unsafe} access or ByteBuffer access). */
    SpanHeapByteBufAllocator(SpanHeap heap, boolean preferDirect, boolean useUnsafe) {
        super(preferDirect);
        this.heap = heap;
        this.useUnsafe = useUnsafe;
        this.heapBuffers = new UnpooledByteBufAllocator(false);
    }

    /** {@return the heap the direct buffers come from} */
    public SpanHeap heap() {
        return heap;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return heapBuffers.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        Block first = new Block(heap, initialCapacity);
        ByteBuf buf = useUnsafe ? new UnsafeSpanHeapBuf(this, first, maxCapacity)
                : new SpanHeapBuf(this, first, maxCapacity);
        return toLeakAwareBuffer(buf);
    }

    @Override
    public boolean isDirectBufferPooled() {
        return false; // the span heap recycles blocks, but buffers are not kept by the allocator
    }

    /** One block of the heap seen as a direct ByteBuffer; {@link #clean()} frees it once. */
    static final class Block implements CleanableDirectBuffer {
        private final SpanHeap heap;
        private final MemorySegment segment;
        private final ByteBuffer buffer;
        private boolean freed;

        Block(SpanHeap heap, int capacity) {
            this.heap = heap;
            // Netty writes before it reads, so the block need not be zeroed.
            this.segment = heap.allocateUninitialized(capacity);
            this.buffer = segment.asByteBuffer();
        }

        @Override
        public ByteBuffer buffer() {
            return buffer;
        }

        @Override
        public void clean() {
            if (!freed) {
                freed = true;
                heap.free(segment);
            }
        }

        @Override
        public boolean hasMemoryAddress() {
            return true;
        }

        @Override
        public long memoryAddress() {
            return segment.address();
        }
    }

    /*
     * The buffers start on a block given to the protected "wrap this ByteBuffer" constructor,
     * which Netty treats as borrowed (it neither frees it on growth nor on release), so they
     * free that first block themselves. Later blocks come from allocateDirectBuffer, which
     * capacity(int) calls and whose clean() Netty calls on growth and on release.
     */

    /**
     * The block a buffer was created over: Netty's wrapping constructor does not own it, so the
     * buffer frees it itself once a capacity change replaced it, or on release. Shared by the
     * two buffer variants, which extend different Netty classes.
     */
    private static final class FirstBlock {
        private Block block;

        FirstBlock(Block block) {
            this.block = block;
        }

        /** Frees the block if the buffer no longer uses it (its capacity changed). */
        void afterCapacityChange(int capacity) {
            if (block != null && capacity != block.buffer().capacity()) {
                release();
            }
        }

        void release() {
            if (block != null) {
                block.clean();
                block = null;
            }
        }
    }

    private static final class SpanHeapBuf extends UnpooledDirectByteBuf {
        private final SpanHeap heap;
        private final FirstBlock first;

        SpanHeapBuf(SpanHeapByteBufAllocator alloc, Block first, int maxCapacity) {
            super(alloc, first.buffer(), maxCapacity);
            this.heap = alloc.heap;
            this.first = new FirstBlock(first);
            writerIndex(0); // the wrapping constructor marks the wrapped bytes readable
        }

        @Override
        protected CleanableDirectBuffer allocateDirectBuffer(int capacity) {
            return new Block(heap, capacity);
        }

        @Override
        public ByteBuf capacity(int newCapacity) {
            super.capacity(newCapacity);
            first.afterCapacityChange(capacity());
            return this;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            first.release();
        }
    }

    private static final class UnsafeSpanHeapBuf extends UnpooledUnsafeDirectByteBuf {
        private final SpanHeap heap;
        private final FirstBlock first;

        UnsafeSpanHeapBuf(SpanHeapByteBufAllocator alloc, Block first, int maxCapacity) {
            super(alloc, first.buffer(), maxCapacity);
            this.heap = alloc.heap;
            this.first = new FirstBlock(first);
            writerIndex(0);
        }

        @Override
        protected CleanableDirectBuffer allocateDirectBuffer(int capacity) {
            return new Block(heap, capacity);
        }

        @Override
        public ByteBuf capacity(int newCapacity) {
            super.capacity(newCapacity);
            first.afterCapacityChange(capacity());
            return this;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            first.release();
        }
    }
}
