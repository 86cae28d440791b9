package org.spanheap.examples.netty;

import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;
import org.spanheap.netty.SpanHeapByteBufAllocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The echo example on spanheap-netty's allocator; the allocator's own tests are in that module. */
class NettyEchoTest {

    @Test
    void echoOnLoopbackChecksEveryByteAndReturnsAllMemory() throws Exception {
        int messages = 100_000;
        try (SpanHeap heap = SpanHeap.create()) {
            SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap);
            long expectedBytes = 0;
            for (int i = 0; i < messages; i++) {
                expectedBytes += LoopbackEcho.length(i);
            }
            long echoed;
            try (LoopbackEcho echo = new LoopbackEcho(alloc)) {
                assertTrue(echo.address().getAddress().isLoopbackAddress());
                echoed = echo.run(messages, 64, 120);
            }
            assertEquals(expectedBytes, echoed);
            assertEquals(0, alloc.metric().usedDirectMemory(), alloc::toString);
            assertEquals(0, heap.stats().liveBytes(), () -> "live after shutdown: " + heap.stats());
        }
    }
}
