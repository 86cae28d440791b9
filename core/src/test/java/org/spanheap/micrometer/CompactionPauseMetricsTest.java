package org.spanheap.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;

class CompactionPauseMetricsTest {

    @Test
    void everyRoundOfTheNamedHeapIsTimedWithPercentiles() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build();
                CompactingHeap other = CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build();
                CompactionPauseMetrics pauses = new CompactionPauseMetrics("pause-test", Tags.of("tier", "edge"))) {
            heap.registerMXBean("pause-test");
            pauses.bindTo(registry);
            assertThrows(IllegalStateException.class, () -> pauses.bindTo(registry));
            Timer timer = registry.get("spanheap.compacting.pauses").tag("heap", "pause-test").tag("tier", "edge").timer();
            long[] handles = new long[4096];
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < handles.length; i++) {
                    handles[i] = heap.allocate(64);
                    other.allocate(64);
                }
                for (int i = 0; i < handles.length; i += 2) {
                    heap.free(handles[i]);
                }
                assertTrue(heap.compact() > 0, "the test needs moves");
            }
            other.compact(); // another heap's rounds are not this timer's
            // the stream delivers events about once a second: wait for them, up to a minute
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (timer.count() < 3 && System.nanoTime() < end) {
                Thread.sleep(50);
            }
            long rounds = timer.count();
            assertTrue(rounds >= 3, "rounds timed: " + rounds);
            assertTrue(timer.max(TimeUnit.NANOSECONDS) > 0);
            ValueAtPercentile[] percentiles = timer.takeSnapshot().percentileValues();
            assertEquals(4, percentiles.length);
            assertEquals(0.999, percentiles[3].percentile());
            assertTrue(percentiles[3].value(TimeUnit.NANOSECONDS) > 0);
        }
    }
}
