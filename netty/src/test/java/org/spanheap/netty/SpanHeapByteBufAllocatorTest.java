package org.spanheap.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.CompositeByteBuf;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;
import org.spanheap.SpanHeapOutOfMemoryError;

import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The allocator's side of the contract: kinds of buffers, capacities, metrics, pooling. */
class SpanHeapByteBufAllocatorTest {

    private static final int MIB = 1 << 20;

    private SpanHeap heap;
    private SpanHeapByteBufAllocator alloc;

    @BeforeEach
    void createHeap() {
        heap = SpanHeap.create();
        alloc = new SpanHeapByteBufAllocator(heap);
    }

    @AfterEach
    void everyBlockWasFreed() {
        try {
            assertEquals(0, alloc.metric().usedDirectMemory(), () -> "direct memory left: " + alloc);
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks left: " + heap.stats());
        } finally {
            heap.close();
        }
    }

    private long rounded(int n) {
        return HeldBytes.of(heap, n);
    }

    @Test
    void usedDirectMemoryIsZeroAfterTheHeapIsClosed() {
        try (SpanHeap own = SpanHeap.create()) {
            SpanHeapByteBufAllocator a = new SpanHeapByteBufAllocator(own);
            a.directBuffer(64).release();
            own.close();
            assertEquals(0, a.metric().usedDirectMemory());
        }
    }

    @Test
    void rejectsANullHeap() {
        assertThrows(NullPointerException.class, () -> new SpanHeapByteBufAllocator(null));
    }

    @Test
    void directBuffersAreSpanHeapBlocksOfThisAllocator() {
        ByteBuf buf = alloc.directBuffer(100, 1000);
        try {
            assertTrue(buf.isDirect());
            assertFalse(buf.hasArray());
            assertTrue(buf.hasMemoryAddress());
            assertSame(alloc, buf.alloc());
            assertEquals(100, buf.capacity());
            assertEquals(1000, buf.maxCapacity());
            assertEquals(0, buf.readerIndex());
            assertEquals(0, buf.writerIndex());
            assertEquals(1, buf.refCnt());
            assertEquals(rounded(100), alloc.metric().usedDirectMemory());
            assertEquals(heap.stats().liveBytes(), alloc.metric().usedDirectMemory());
        } finally {
            buf.release();
        }
    }

    @Test
    void preferDirectDecidesWhatBufferReturnsButNotIoBuffer() {
        ByteBuf direct = alloc.buffer(10);
        ByteBuf io = alloc.ioBuffer(10);
        SpanHeapByteBufAllocator heapFirst = new SpanHeapByteBufAllocator(heap, false);
        ByteBuf onHeap = heapFirst.buffer(10);
        ByteBuf ioOfHeapFirst = heapFirst.ioBuffer(10);
        try {
            assertTrue(direct.isDirect());
            assertTrue(io.isDirect());
            assertFalse(onHeap.isDirect());
            assertTrue(onHeap.hasArray());
            // AbstractByteBufAllocator returns direct I/O buffers when direct buffers are pooled.
            assertTrue(ioOfHeapFirst.isDirect());
        } finally {
            direct.release();
            io.release();
            onHeap.release();
            ioOfHeapFirst.release();
        }
    }

    @Test
    void rejectsCapacitiesOutsideTheirRange() {
        assertThrows(IllegalArgumentException.class, () -> alloc.directBuffer(-1));
        assertThrows(IllegalArgumentException.class, () -> alloc.directBuffer(10, 5));
        assertThrows(IllegalArgumentException.class, () -> alloc.heapBuffer(10, 5));
        ByteBuf empty = alloc.directBuffer(0, 0);
        assertEquals(0, empty.capacity());
        assertEquals(0, empty.maxCapacity());
        assertThrows(IndexOutOfBoundsException.class, () -> empty.writeByte(1));
        empty.release();
    }

    @Test
    void calculateNewCapacityDoublesUpTo4MiBThenStepsBy4MiB() {
        int max = Integer.MAX_VALUE;
        assertEquals(64, alloc.calculateNewCapacity(1, max));
        assertEquals(128, alloc.calculateNewCapacity(65, max));
        assertEquals(1024, alloc.calculateNewCapacity(1000, max));
        assertEquals(4 * MIB, alloc.calculateNewCapacity(4 * MIB, max));
        assertEquals(8 * MIB, alloc.calculateNewCapacity(4 * MIB + 1, max));
        assertEquals(12 * MIB, alloc.calculateNewCapacity(9 * MIB, max));
        // Never above maxCapacity.
        assertEquals(100, alloc.calculateNewCapacity(100, 100));
        assertEquals(1000, alloc.calculateNewCapacity(600, 1000));
        assertEquals(6 * MIB, alloc.calculateNewCapacity(5 * MIB, 6 * MIB));
        assertThrows(IllegalArgumentException.class, () -> alloc.calculateNewCapacity(101, 100));
        assertThrows(IllegalArgumentException.class, () -> alloc.calculateNewCapacity(-1, 100));
    }

    @Test
    void usedDirectMemoryFollowsTheRoundedCapacitiesAndReturnsToZero() {
        ByteBufAllocatorMetric metric = alloc.metric();
        assertSame(metric, alloc.metric());
        assertEquals(0, metric.usedDirectMemory());
        ByteBuf a = alloc.directBuffer(1000);
        ByteBuf b = alloc.directBuffer(24, 1 << 16);
        assertEquals(rounded(1000) + rounded(24), metric.usedDirectMemory());
        b.writeZero(100); // grows b to calculateNewCapacity(100, max) = 128
        assertEquals(128, b.capacity());
        assertEquals(rounded(1000) + rounded(128), metric.usedDirectMemory());
        b.capacity(5000);
        assertEquals(rounded(1000) + rounded(5000), metric.usedDirectMemory());
        assertTrue(a.release());
        assertEquals(rounded(5000), metric.usedDirectMemory());
        ByteBuf slice = b.retainedSlice(0, 10);
        assertFalse(b.release());
        assertEquals(rounded(5000), metric.usedDirectMemory(), "a retained slice keeps the block");
        assertTrue(slice.release());
        assertEquals(0, metric.usedDirectMemory());
        assertTrue(metric.toString().contains("usedDirectMemory: 0"), metric.toString());
    }

    @Test
    void heapBuffersComeFromAPoolAndTheHeapMetricCountsItsChunks() {
        ByteBufAllocatorMetric metric = alloc.metric();
        assertEquals(0, metric.usedHeapMemory(), "a new allocator holds no heap chunk");
        ByteBuf a = alloc.heapBuffer(100);
        ByteBuf b = alloc.heapBuffer(100);
        assertFalse(a.isDirect());
        assertTrue(a.hasArray());
        // Pooled: both are slices of one chunk's array, not arrays of their own.
        assertSame(a.array(), b.array());
        assertTrue(a.array().length > 100 * 2, "chunk array: " + a.array().length);
        assertTrue(a.arrayOffset() + 100 <= b.arrayOffset() || b.arrayOffset() + 100 <= a.arrayOffset(),
                "overlapping: " + a.arrayOffset() + ", " + b.arrayOffset());
        long chunks = metric.usedHeapMemory();
        assertTrue(chunks >= a.array().length, metric::toString);
        a.writeLong(7).writeLong(8);
        b.writeLong(9);
        assertEquals(7, a.readLong());
        assertEquals(8, a.readLong());
        assertEquals(9, b.readLong());
        assertTrue(a.release());
        assertTrue(b.release());
        // The chunk is kept for reuse, as in Netty's pooled allocator, and reused.
        assertEquals(chunks, metric.usedHeapMemory());
        ByteBuf c = alloc.heapBuffer(100);
        assertEquals(chunks, metric.usedHeapMemory());
        assertTrue(c.release());
        assertEquals(0, metric.usedDirectMemory(), "heap buffers use no direct memory");
    }

    @Test
    void isDirectBufferPooledAndAReleasedBlockIsReused() {
        assertTrue(alloc.isDirectBufferPooled());
        ByteBuf first = alloc.directBuffer(256);
        long address = first.memoryAddress();
        assertTrue(first.release());
        ByteBuf second = alloc.directBuffer(256);
        try {
            assertEquals(address, second.memoryAddress(), "the span heap's thread cache hands the block out again");
        } finally {
            second.release();
        }
    }

    @Test
    void compositeBuffersOfDirectComponentsReadAcrossComponentsAndFreeThemAll() {
        CompositeByteBuf composite = alloc.compositeDirectBuffer();
        assertSame(alloc, composite.alloc());
        for (int part = 0; part < 5; part++) {
            ByteBuf component = alloc.directBuffer(3000);
            for (int i = 0; i < 3000; i++) {
                component.writeByte(part * 3000 + i);
            }
            composite.addComponent(true, component);
        }
        assertEquals(5, composite.numComponents());
        assertEquals(15_000, composite.readableBytes());
        assertTrue(composite.isDirect());
        assertEquals(5 * rounded(3000), alloc.metric().usedDirectMemory());
        for (int i = 0; i < 15_000; i++) {
            assertEquals((byte) i, composite.getByte(i), "byte " + i);
        }
        // A long that spans the first two components, read big-endian.
        long expected = 0;
        for (int i = 2996; i < 3004; i++) {
            expected = expected << 8 | (i & 0xff);
        }
        assertEquals(expected, composite.getLong(2996));

        // Consolidating copies into one buffer from the composite's allocator: this one.
        composite.consolidate();
        assertEquals(1, composite.numComponents());
        assertEquals(rounded(15_000), alloc.metric().usedDirectMemory());
        for (int i = 0; i < 15_000; i += 7) {
            assertEquals((byte) i, composite.getByte(i), "byte " + i);
        }
        assertTrue(composite.release());
    }

    @Test
    void leakAwareBuffersWrapOurBuffersAndFreeThemOnRelease() {
        ResourceLeakDetector.Level level = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        try {
            ByteBuf tracked = alloc.directBuffer(64);
            assertNotSame(SpanHeapByteBuf.class, tracked.getClass(), "PARANOID tracks every buffer");
            assertSame(SpanHeapByteBuf.class, tracked.unwrap().getClass());
            tracked.writeInt(42);
            ByteBuf slice = tracked.retainedSlice();
            assertFalse(tracked.release());
            assertEquals(42, slice.getInt(0));
            assertTrue(slice.release());
            assertEquals(0, tracked.refCnt());
        } finally {
            ResourceLeakDetector.setLevel(level);
        }
    }

    @Test
    void aFullHeapFailsTheAllocationOrGrowthAndLeavesTheBufferAsItWas() {
        try (SpanHeap limited = SpanHeap.builder().byteLimit(4 * MIB).build()) {
            SpanHeapByteBufAllocator small = new SpanHeapByteBufAllocator(limited);
            assertThrows(SpanHeapOutOfMemoryError.class, () -> small.directBuffer(8 * MIB));
            assertEquals(0, small.metric().usedDirectMemory());

            ByteBuf buf = small.directBuffer(MIB);
            buf.writeZero(MIB - 8).writeLong(42);
            // OutOfMemoryError, as Netty's own allocators throw when direct memory runs out.
            OutOfMemoryError e = assertThrows(OutOfMemoryError.class, () -> buf.capacity(16 * MIB));
            assertTrue(e instanceof SpanHeapOutOfMemoryError, e::toString);
            assertEquals(MIB, buf.capacity());
            assertEquals(MIB, buf.writerIndex());
            assertEquals(42, buf.getLong(MIB - 8));
            assertEquals(limited.stats().liveBytes(), small.metric().usedDirectMemory());
            assertTrue(small.metric().usedDirectMemory() >= MIB);
            assertTrue(buf.release());
            assertEquals(0, small.metric().usedDirectMemory());
            assertEquals(0, limited.stats().liveBytes());
        }
    }

    @Test
    void anotherThreadMayReleaseABuffer() throws InterruptedException {
        ByteBuf buf = alloc.directBuffer(4096);
        buf.writeZero(4096);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread releaser = new Thread(() -> {
            try {
                if (!buf.release()) {
                    throw new AssertionError("release did not reach zero");
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        releaser.start();
        releaser.join();
        assertNull(failure.get());
        assertEquals(0, buf.refCnt());
    }

    @Test
    void toStringNamesTheMetrics() {
        String s = alloc.toString();
        assertTrue(s.startsWith("SpanHeapByteBufAllocator(usedHeapMemory: "), s);
        assertSame(heap, alloc.heap());
    }
}
