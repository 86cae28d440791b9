package org.spanheap.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where {@link SpanHeapByteBufAllocator} deliberately differs from Netty's
 * {@link PooledByteBufAllocator}, each difference side by side with a pooled allocator of
 * Netty's own (docs/netty.md, <i>Where it differs from Netty's pooled allocator</i>).
 */
class PooledAllocatorDifferencesTest {

    private SpanHeap heap;
    private SpanHeapByteBufAllocator alloc;
    private PooledByteBufAllocator netty;

    @BeforeEach
    void createAllocators() {
        heap = SpanHeap.create();
        alloc = new SpanHeapByteBufAllocator(heap);
        netty = new PooledByteBufAllocator(true);
    }

    @AfterEach
    void everyBlockWasFreed() {
        try {
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks left: " + heap.stats());
        } finally {
            heap.close();
        }
    }

    /** The buffer under Netty's leak-detection wrapper, if it has one. */
    private static ByteBuf unwrapped(ByteBuf buf) {
        ByteBuf b = buf;
        while (b.unwrap() != null) {
            b = b.unwrap();
        }
        return b;
    }

    @Test
    void usedDirectMemoryCountsLiveBlocksWhereNettyCountsChunks() {
        ByteBuf ours = alloc.directBuffer(100);
        ByteBuf theirs = netty.directBuffer(100);
        long chunk = netty.metric().chunkSize();
        try {
            assertEquals(HeldBytes.of(heap, 100), alloc.metric().usedDirectMemory(),
                    "ours: the block, rounded up to its size class");
            assertEquals(chunk, netty.metric().usedDirectMemory(), "Netty's: the chunk the buffer is carved from");
        } finally {
            ours.release();
            theirs.release();
        }
        assertEquals(0, alloc.metric().usedDirectMemory(), "ours: the block went back to the heap");
        assertEquals(chunk, netty.metric().usedDirectMemory(), "Netty's: the chunk is kept");
    }

    @Test
    void usedHeapMemoryCountsThePooledDelegatesChunksNotTheCapacityAskedFor() {
        ByteBufAllocatorMetric metric = alloc.metric();
        ByteBuf a = alloc.heapBuffer(100);
        PooledByteBufAllocator delegate = assertInstanceOf(PooledByteBufAllocator.class, a.alloc(),
                "a heap buffer's alloc() is the pooled delegate");
        long chunk = delegate.metric().chunkSize();
        assertTrue(chunk > 100, () -> "chunk size " + chunk);
        assertEquals(chunk, metric.usedHeapMemory(), "one chunk, not the 100 bytes asked for");
        ByteBuf b = alloc.heapBuffer(1000);
        assertEquals(chunk, metric.usedHeapMemory(), "the second buffer is carved from the same chunk");
        assertTrue(a.release());
        assertTrue(b.release());
        assertEquals(chunk, metric.usedHeapMemory(), "the chunk is kept for reuse after the buffers are released");
        assertEquals(0, metric.usedDirectMemory(), "heap buffers use no direct memory");
    }

    @Test
    void directBuffersAreTheModulesOwnTypeNeverNettysUnsafeOnes() {
        ByteBuf ours = alloc.directBuffer(64);
        ByteBuf theirs = netty.directBuffer(64);
        try {
            ByteBuf buf = unwrapped(ours);
            assertSame(SpanHeapByteBuf.class, buf.getClass());
            assertFalse(buf.getClass().getName().contains("Unsafe"), buf.getClass().getName());
            // With or without sun.misc.Unsafe: a memory address, the block's, from FFM.
            assertTrue(ours.hasMemoryAddress());
            assertEquals(ours.memoryAddress(), MemorySegment.ofBuffer(ours.nioBuffer(0, 64)).address());
            assertTrue(unwrapped(theirs).getClass().getName().startsWith("io.netty.buffer."),
                    unwrapped(theirs).getClass().getName());
        } finally {
            ours.release();
            theirs.release();
        }
    }

    @Test
    void heapBuffersAreThePooledAllocatorsOwnType() {
        ByteBuf ours = alloc.heapBuffer(64);
        ByteBuf theirs = new PooledByteBufAllocator(false).heapBuffer(64);
        try {
            // Netty's pooled heap class (its Unsafe variant exactly where Netty uses Unsafe), not one of ours.
            assertSame(unwrapped(theirs).getClass(), unwrapped(ours).getClass());
            assertNotSame(alloc, ours.alloc());
            assertTrue(ours.hasArray());
        } finally {
            ours.release();
            theirs.release();
        }
    }

    @Test
    void aReleasedDirectBufferObjectIsNeverHandedOutAgain() {
        ByteBuf first = alloc.directBuffer(64);
        long address = first.memoryAddress();
        assertTrue(first.release());
        ByteBuf second = alloc.directBuffer(64);
        try {
            assertEquals(address, second.memoryAddress(), "the block is reused");
            assertNotSame(unwrapped(first), unwrapped(second), "the buffer object is not");
            assertThrows(IllegalReferenceCountException.class, () -> first.getByte(0),
                    "the released buffer stays released while its block serves another buffer");
            second.setByte(0, 42);
            assertEquals(42, second.getByte(0));
        } finally {
            second.release();
        }
    }
}
