package org.spanheap.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.spanheap.Engine;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

class SpanHeapMetricsTest {

    @Test
    void theGaugesAreTheHeapsStats() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SpanHeap heap = SpanHeap.create()) {
            new SpanHeapMetrics(heap, "buffers", Tags.of("tier", "edge")).bindTo(registry);
            MemorySegment a = heap.allocate(1000);
            MemorySegment big = heap.allocate(4 << 20);
            HeapStats s = heap.stats();
            assertEquals(s.liveBytes(), gauge(registry, "spanheap.memory.live"));
            assertTrue(s.liveBytes() >= 1000 + (4 << 20), s.toString());
            assertEquals(s.committedBytes(), gauge(registry, "spanheap.memory.committed"));
            assertEquals(s.largeBytes(), gauge(registry, "spanheap.memory.large"));
            assertEquals(1.0, registry.get("spanheap.large.objects").gauge().value());
            assertEquals(s.spansFree(), registry.get("spanheap.spans").tag("state", "free").gauge().value());
            assertEquals(s.spansHot(), registry.get("spanheap.spans").tag("state", "hot").gauge().value());
            assertEquals(s.spansCarved(), registry.get("spanheap.spans.carved").functionCounter().count());
            assertEquals("edge", registry.get("spanheap.memory.live").tag("heap", "buffers").gauge().getId()
                    .getTag("tier"));
            heap.free(big);
            heap.free(a);
            assertEquals(0.0, registry.get("spanheap.large.objects").gauge().value());
        }
    }

    @Test
    void aBinderBoundInlineKeepsReadingAfterAGarbageCollection() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (SpanHeap heap = SpanHeap.create()) {
            new SpanHeapMetrics(heap, "buffers", Tags.empty()).bindTo(registry);
            GarbageCollections.collect();
            MemorySegment big = heap.allocate(4 << 20);
            assertEquals(1.0, registry.get("spanheap.large.objects").gauge().value());
            assertEquals(heap.stats().spansCarved(), registry.get("spanheap.spans.carved").functionCounter().count());
            heap.free(big);
        }
    }

    @Test
    void aClosedHeapsGaugesReadNaNAndItsCountersKeepTheirValues() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        SpanHeap heap = SpanHeap.create();
        new SpanHeapMetrics(heap, "buffers", Tags.empty()).bindTo(registry);
        heap.allocate(100);
        double carved = registry.get("spanheap.spans.carved").functionCounter().count();
        if (heap.engine() == Engine.NATIVE) { // the malloc engine has no spans
            assertTrue(carved >= 1, "carved " + carved);
        }
        heap.close();
        assertTrue(Double.isNaN(gauge(registry, "spanheap.memory.live")));
        assertEquals(carved, registry.get("spanheap.spans.carved").functionCounter().count());
    }

    @Test
    void aPrometheusScrapeShowsTheMetersInBytes() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (SpanHeap heap = SpanHeap.create()) {
            new SpanHeapMetrics(heap, "buffers", Tags.empty()).bindTo(registry);
            heap.allocate(1000);
            String text = registry.scrape();
            long live = heap.stats().liveBytes();
            assertTrue(text.contains("spanheap_memory_live_bytes{heap=\"buffers\"} " + (double) live), text);
            assertTrue(text.contains("# TYPE spanheap_memory_committed_bytes gauge"), text);
            assertTrue(text.contains("spanheap_spans{heap=\"buffers\",state=\"free\"}"), text);
            assertTrue(text.contains("# TYPE spanheap_spans_carved_total counter"), text);
        }
    }

    private static double gauge(SimpleMeterRegistry registry, String name) {
        return registry.get(name).gauge().value();
    }
}
