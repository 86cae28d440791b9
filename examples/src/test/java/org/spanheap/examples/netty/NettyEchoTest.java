package org.spanheap.examples.netty;

import io.netty.buffer.ByteBuf;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.spanheap.SpanHeap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
            assertEquals(0, heap.stats().liveBytes(), () -> "live after shutdown: " + heap.stats());
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void buffersGrowKeepTheirBytesAndFreeEveryBlock(boolean useUnsafe) {
        // examples/pom.xml runs the tests with --sun-misc-unsafe-memory-access=allow, which
        // Netty needs on JDK 25 to use Unsafe; without it this variant must fail, not skip.
        assertTrue(!useUnsafe || PlatformDependent.hasUnsafe(), "Netty cannot use sun.misc.Unsafe in this JVM");
        try (SpanHeap heap = SpanHeap.create()) {
            SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap, true, useUnsafe);
            ByteBuf buf = alloc.directBuffer(16);
            assertTrue(buf.isDirect());
            assertEquals(0, buf.readableBytes());
            assertTrue(heap.stats().liveBytes() >= 16);
            for (int i = 0; i < 100_000; i++) {
                buf.writeByte(i * 7); // grows 16 -> ... -> 128 KiB, one reallocation each time
            }
            buf.capacity(200_000);
            for (int i = 0; i < 100_000; i++) {
                assertEquals((byte) (i * 7), buf.getByte(i));
            }
            ByteBuf small = alloc.buffer(0, 8);
            small.writeLong(42);
            assertEquals(42, small.readLong());
            assertTrue(small.release());
            assertTrue(buf.release());
            assertEquals(0, heap.stats().liveBytes(), () -> "live after release: " + heap.stats());

            ByteBuf onHeap = alloc.heapBuffer(32);
            assertTrue(onHeap.hasArray());
            onHeap.release();
        }
    }
}
