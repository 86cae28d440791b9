package org.spanheap.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A Netty {@link ByteBufAllocator} whose direct buffers are blocks of a {@link SpanHeap}.
 *
 * <p>Netty's pooled allocators keep arenas, chunks and thread caches of their own on top of
 * direct {@code ByteBuffer}s. A span heap already has size classes and per-thread caches, so
 * this allocator asks it for one block per direct buffer and frees the block when the
 * buffer's reference count drops to zero: no chunk held for a small buffer, and the memory
 * shows in {@link SpanHeap#stats()}. Set it as the allocator of a server's channels:
 *
 * {@snippet :
 * SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(SpanHeap.global());
 * ServerBootstrap b = new ServerBootstrap()
 *         .option(ChannelOption.ALLOCATOR, alloc)        // the listening channel
 *         .childOption(ChannelOption.ALLOCATOR, alloc);  // every accepted connection
 * }
 *
 * <p><b>Direct buffers</b> are read and written through the block's
 * {@link MemorySegment}; they have a {@linkplain ByteBuf#memoryAddress() memory address}
 * and one NIO buffer. Growing one ({@link ByteBuf#capacity(int)}, which
 * {@code ensureWritable} calls with {@link #calculateNewCapacity(int, int)}) allocates a new
 * block, copies the bytes and frees the old block. Any thread may release a buffer. When
 * the heap cannot give a block (its {@linkplain SpanHeap.Builder#byteLimit(long) byte limit}
 * is reached, or the OS refuses memory), allocating or growing a direct buffer throws
 * {@link org.spanheap.SpanHeapOutOfMemoryError}, an {@link OutOfMemoryError} as Netty's own
 * allocators throw; a growth that fails leaves the buffer as it was.
 *
 * <p>The allocator is thread-safe: all event loops of a group may share one.
 *
 * <p><b>Heap buffers</b> come from a {@link PooledByteBufAllocator} that this allocator
 * creates for them (heap arenas only, Netty's default number and chunk size): pooled
 * arrays, not a new array per buffer. Such a buffer's {@link ByteBuf#alloc()} is that
 * pooled allocator, not this one.
 *
 * <p><b>Metrics</b> ({@link #metric()}): {@code usedDirectMemory} is the span heap's live
 * bytes ({@link SpanHeap#stats()}): the blocks of the direct buffers not yet released, each
 * rounded up to its size class, and the blocks of anyone else who uses the same heap (give
 * the allocator a heap of its own to see its buffers alone). It is read when asked, not
 * counted per buffer: a counter updated by every allocation and release cost two atomic
 * additions per buffer, a sixth of the allocate-write-release time (docs/netty.md). It is 0
 * once every block is freed, and 0 after the heap is closed. {@code usedHeapMemory} is the pooled heap allocator's, which
 * counts the chunks it holds: like Netty's pooled allocator, it stays above 0 after the
 * buffers are released, because the chunks are kept for reuse.
 *
 * @implNote Only Netty's public API is used ({@code io.netty.buffer}, no
 * {@code io.netty.util.internal}), so the same jar runs on Netty 4.1 and 4.2. Direct
 * buffers are therefore a class of this library, not Netty's {@code UnpooledDirectByteBuf}:
 * on Netty 4.2 the hook that gives that class its memory returns an internal type.
 * Allocating and releasing a direct buffer costs a span heap allocate and free (a few
 * nanoseconds on the owning thread's cache) plus the {@code ByteBuf} object; a growth
 * copies the buffer.
 */
public final class SpanHeapByteBufAllocator extends AbstractByteBufAllocator
        implements ByteBufAllocatorMetricProvider {

    private final SpanHeap heap;
    private final PooledByteBufAllocator heapBuffers;
    private final Metric metric = new Metric();

    /**
     * Creates an allocator whose {@link #buffer()} and {@link #ioBuffer()} return direct
     * buffers.
     *
     * @param heap where direct buffers come from; the allocator does not close it
     * @throws NullPointerException if {@code heap} is null
     */
    public SpanHeapByteBufAllocator(SpanHeap heap) {
        this(heap, true);
    }

    /**
     * Creates an allocator.
     *
     * @param heap         where direct buffers come from; the allocator does not close it
     * @param preferDirect whether {@link #buffer()} returns direct buffers (heap buffers
     *                     otherwise)
     * @throws NullPointerException if {@code heap} is null
     */
    public SpanHeapByteBufAllocator(SpanHeap heap, boolean preferDirect) {
        super(preferDirect);
        this.heap = Objects.requireNonNull(heap, "heap");
        // Heap arenas only: a stray alloc().directBuffer() on a heap buffer should not
        // reserve pooled direct chunks beside the span heap.
        this.heapBuffers = new PooledByteBufAllocator(false,
                PooledByteBufAllocator.defaultNumHeapArena(), 0,
                PooledByteBufAllocator.defaultPageSize(), PooledByteBufAllocator.defaultMaxOrder(),
                PooledByteBufAllocator.defaultSmallCacheSize(), PooledByteBufAllocator.defaultNormalCacheSize(),
                PooledByteBufAllocator.defaultUseCacheForAllThreads());
    }

    /** {@return the heap the direct buffers come from} */
    public SpanHeap heap() {
        return heap;
    }

    /**
     * {@return the allocator's memory use}
     * The object is the same on every call and reads current values.
     */
    @Override
    public ByteBufAllocatorMetric metric() {
        return metric;
    }

    /**
     * {@return {@code true}: direct buffers are blocks of the span heap, which recycles them}
     * A released buffer's block goes back to the heap's per-thread cache and size-class
     * free lists, and the next direct buffer of that size class reuses it; direct buffers
     * are cheap to allocate, which is what Netty asks this for (for example before it copies
     * a heap buffer into a direct one for a socket write).
     */
    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return heapBuffers.heapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(new SpanHeapByteBuf(this, initialCapacity, maxCapacity));
    }

    /** A block for a direct buffer; its contents are unspecified (Netty's are too). */
    MemorySegment allocateBlock(int capacity) {
        return heap.allocateUninitialized(capacity);
    }

    /** Gives a block of {@link #allocateBlock(int)} back to the heap. */
    void freeBlock(MemorySegment block) {
        heap.free(block);
    }

    @Override
    public String toString() {
        return "SpanHeapByteBufAllocator(" + metric + ", " + heap + ")";
    }

    private final class Metric implements ByteBufAllocatorMetric {
        @Override
        public long usedHeapMemory() {
            return heapBuffers.metric().usedHeapMemory();
        }

        @Override
        public long usedDirectMemory() {
            try {
                return heap.stats().liveBytes();
            } catch (IllegalStateException closed) {
                return 0; // the heap was closed: it holds nothing
            }
        }

        @Override
        public String toString() {
            return "usedHeapMemory: " + usedHeapMemory() + ", usedDirectMemory: " + usedDirectMemory();
        }
    }
}
