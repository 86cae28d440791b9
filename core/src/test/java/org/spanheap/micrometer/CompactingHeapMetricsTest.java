package org.spanheap.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

class CompactingHeapMetricsTest {

    /** A heap compacted by hand only, so that its counters change when the test says. */
    private static CompactingHeap heap() {
        return CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build();
    }

    /** Fills pages with small objects and frees every other one, then compacts: {@return bytes moved} */
    private static long fragmentAndCompact(CompactingHeap heap) {
        long[] handles = new long[4096];
        for (int i = 0; i < handles.length; i++) {
            handles[i] = heap.allocate(64);
        }
        for (int i = 0; i < handles.length; i += 2) {
            heap.free(handles[i]);
        }
        return heap.compact();
    }

    @Test
    void aBinderBoundInlineKeepsCountingAfterAGarbageCollection() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (CompactingHeap heap = heap()) {
            new CompactingHeapMetrics(heap, "values", Tags.empty()).bindTo(registry);
            assertEquals(0.0, registry.get("spanheap.compacting.moved").functionCounter().count());
            GarbageCollections.collect();
            fragmentAndCompact(heap);
            assertEquals(heap.stats().movedBytes(), registry.get("spanheap.compacting.moved").functionCounter().count());
            assertEquals(2048.0, registry.get("spanheap.compacting.objects").gauge().value());
        }
    }

    @Test
    void theMetersAreTheHeapsCountersAndMemory() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (CompactingHeap heap = heap()) {
            new CompactingHeapMetrics(heap, "values", Tags.empty()).bindTo(registry);
            assertEquals(0.0, registry.get("spanheap.compacting.moved").functionCounter().count());
            fragmentAndCompact(heap);
            CompactingHeapStats s = heap.stats();
            assertTrue(s.movedBytes() > 0, "the test needs moves: " + s);
            assertEquals(s.movedBytes(), registry.get("spanheap.compacting.moved").functionCounter().count());
            assertEquals(s.liveBytes(), registry.get("spanheap.compacting.memory.live").gauge().value());
            assertEquals(2048 * 64.0, registry.get("spanheap.compacting.memory.live").gauge().value());
            assertEquals(2048.0, registry.get("spanheap.compacting.objects").gauge().value());
            assertEquals(s.committedBytes(), registry.get("spanheap.compacting.memory.committed").gauge().value());
            double resident = registry.get("spanheap.compacting.memory.resident").gauge().value();
            assertTrue(resident > 0 && resident <= s.committedBytes(), "resident " + resident);
            FunctionTimer rounds = registry.get("spanheap.compacting.rounds").functionTimer();
            assertEquals(s.compactionIncrements(), rounds.count());
            assertEquals(s.totalIncrementNanos(), rounds.totalTime(TimeUnit.NANOSECONDS), 1.0);
            assertEquals(s.maxIncrementNanos(),
                    registry.get("spanheap.compacting.round.max").timeGauge().value(TimeUnit.NANOSECONDS), 1.0);
            assertEquals(s.epochs(), registry.get("spanheap.compacting.epochs").functionCounter().count());
        }
        // closed: gauges NaN, counters as last read
        assertTrue(Double.isNaN(registry.get("spanheap.compacting.memory.live").gauge().value()));
        assertTrue(Double.isNaN(registry.get("spanheap.compacting.memory.resident").gauge().value()));
        assertTrue(registry.get("spanheap.compacting.moved").functionCounter().count() > 0);
    }

    @Test
    void aPrometheusScrapeShowsRoundsAsASummaryInSeconds() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (CompactingHeap heap = heap()) {
            new CompactingHeapMetrics(heap, "values", Tags.of("tier", "edge")).bindTo(registry);
            fragmentAndCompact(heap);
            long rounds = heap.stats().compactionIncrements();
            String text = registry.scrape();
            assertTrue(text.contains("spanheap_compacting_rounds_seconds_count{heap=\"values\",tier=\"edge\"} "
                    + rounds), text);
            assertTrue(text.contains("spanheap_compacting_rounds_seconds_sum{heap=\"values\",tier=\"edge\"}"), text);
            assertTrue(text.contains("# TYPE spanheap_compacting_moved_bytes_total counter"), text);
            assertTrue(text.contains("spanheap_compacting_memory_live_bytes{heap=\"values\",tier=\"edge\"} "
                    + (double) (2048 * 64)), text);
            assertTrue(text.contains("spanheap_compacting_round_max_seconds{"), text);
        }
    }
}
