package org.spanheap.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.spanheap.Engine;
import org.spanheap.SpanHeap;

class ThreadCacheDrainMetricsTest {

    /** A thread that frees what it allocated, so that its cache holds the blocks when it ends. */
    private static void threadThatCachesBlocks(SpanHeap heap) throws InterruptedException {
        Thread t = Thread.ofPlatform().start(() -> {
            MemorySegment[] blocks = new MemorySegment[100];
            for (int i = 0; i < blocks.length; i++) {
                blocks[i] = heap.allocate(64);
            }
            for (MemorySegment b : blocks) {
                heap.free(b);
            }
        });
        t.join();
    }

    @Test
    void theCachesOfEndedThreadsThatTheHeapDrainsAreCounted() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SpanHeap heap = SpanHeap.create();
                SpanHeap other = SpanHeap.create();
                ThreadCacheDrainMetrics drains = new ThreadCacheDrainMetrics("drain-test", Tags.empty())) {
            heap.registerMXBean("drain-test");
            other.registerMXBean("drain-test-other");
            drains.bindTo(registry);
            assertThrows(IllegalStateException.class, () -> drains.bindTo(registry));
            Counter caches = registry.get("spanheap.thread.caches.drained").tag("heap", "drain-test").counter();
            Counter bytes = registry.get("spanheap.thread.caches.drained.memory").counter();
            for (int i = 0; i < 2; i++) {
                threadThatCachesBlocks(heap);
                threadThatCachesBlocks(other);
                heap.stats(); // drains the dead thread's cache
                other.stats();
            }
            if (heap.engine() == Engine.MALLOC) {
                assertEquals(0.0, caches.count(), "the malloc engine has no thread caches to drain");
                return;
            }
            // the stream delivers events about once a second: wait for them, up to a minute
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (caches.count() < 2 && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            assertEquals(2.0, caches.count(), "two ended threads' caches of this heap, none of the other's");
            assertTrue(bytes.count() >= 2 * 100 * 64, "bytes: " + bytes.count());
        }
    }
}
