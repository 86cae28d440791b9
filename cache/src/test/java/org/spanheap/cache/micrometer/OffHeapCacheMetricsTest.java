package org.spanheap.cache.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.spanheap.cache.CacheStats;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

class OffHeapCacheMetricsTest {

    /** A cache whose clock the test moves; capacity for a few 1000-byte values. */
    private static OffHeapCache<String, byte[]> cache(AtomicLong now) {
        return OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).capacity(8 * 1200)
                .variableExpiry().ticker(now::get).registerMXBean("metrics-test").build();
    }

    /** Hits 2, misses 4, puts 11, evictions by size and by expiry, loads 1 and 1 failed. */
    private static void use(OffHeapCache<String, byte[]> c, AtomicLong now) {
        c.put("a", new byte[1000]);
        c.get("a");
        c.get("a");
        c.get("nope");
        c.put("t", new byte[10], Duration.ofSeconds(1));
        now.addAndGet(Duration.ofSeconds(2).toNanos());
        c.get("t"); // expired: a miss
        c.computeIfAbsent("loaded", k -> new byte[10]); // a miss, a load, a put
        c.computeIfAbsent("nothing", k -> null); // a miss, a failed load
        for (int i = 0; i < 8; i++) {
            c.put("k" + i, new byte[1000]); // over the capacity: evictions
        }
        c.cleanUp();
    }

    @Test
    void theMetersAreTheCachesStatsUnderCaffeinesNames() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<String, byte[]> c = cache(now)) {
            OffHeapCacheMetrics.monitor(registry, c, "tier", "edge");
            use(c, now);
            CacheStats s = c.stats();
            assertEquals(2, s.hits());
            assertEquals(4, s.misses());
            assertEquals(11, s.puts(), s.toString());
            assertTrue(s.evictions() > 0 && s.expirations() == 1, s.toString());
            assertEquals(2.0, registry.get("cache.gets").tag("result", "hit").tag("cache", "metrics-test")
                    .tag("tier", "edge").functionCounter().count());
            assertEquals(4.0, registry.get("cache.gets").tag("result", "miss").functionCounter().count());
            assertEquals(11.0, registry.get("cache.puts").functionCounter().count());
            assertEquals(s.evictions() + 1.0, registry.get("cache.evictions").functionCounter().count());
            assertEquals(s.evictions(), registry.get("cache.evictions.by.cause").tag("cause", "size")
                    .functionCounter().count());
            assertEquals(1.0, registry.get("cache.evictions.by.cause").tag("cause", "expired")
                    .functionCounter().count());
            assertEquals(1.0, registry.get("cache.load").tag("result", "success").functionCounter().count());
            assertEquals(1.0, registry.get("cache.load").tag("result", "failure").functionCounter().count());
            assertEquals(s.entries(), registry.get("cache.size").gauge().value());
            assertEquals(s.weightedBytes(), registry.get("cache.charged").gauge().value());
            assertEquals(8 * 1200.0, registry.get("cache.capacity").gauge().value());
            assertEquals(s.liveBytes(), registry.get("cache.offheap.live").gauge().value());
            assertEquals(s.committedBytes(), registry.get("cache.offheap.committed").gauge().value());
            assertEquals(OffHeapCacheMetrics.METERS, registry.getMeters().size());
        }
        // closed: counters keep their last values, gauges read NaN
        assertEquals(2.0, registry.get("cache.gets").tag("result", "hit").functionCounter().count());
        assertTrue(Double.isNaN(registry.get("cache.capacity").gauge().value()));
    }

    @Test
    void aBinderBoundInlineKeepsCountingAfterAGarbageCollection() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<String, byte[]> c = cache(now)) {
            OffHeapCacheMetrics.monitor(registry, c);
            java.lang.ref.WeakReference<Object> canary = new java.lang.ref.WeakReference<>(new Object());
            for (int i = 0; i < 50 && canary.get() != null; i++) {
                System.gc();
                Thread.onSpinWait();
            }
            assertTrue(canary.get() == null, "no garbage collection happened");
            use(c, now);
            CacheStats s = c.stats();
            assertEquals(11.0, registry.get("cache.puts").functionCounter().count());
            assertEquals(s.evictions(), registry.get("cache.evictions.by.cause").tag("cause", "size")
                    .functionCounter().count());
            assertEquals(1.0, registry.get("cache.load").tag("result", "success").functionCounter().count());
            assertEquals(s.weightedBytes(), registry.get("cache.charged").gauge().value());
        }
    }

    @Test
    void aPrometheusScrapeHasTheNamesDashboardsForCaffeineUse() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<String, byte[]> c = cache(now)) {
            OffHeapCacheMetrics.monitor(registry, c);
            use(c, now);
            String text = registry.scrape();
            assertTrue(text.contains("cache_gets_total{cache=\"metrics-test\",result=\"hit\"} 2.0"), text);
            assertTrue(text.contains("cache_gets_total{cache=\"metrics-test\",result=\"miss\"} 4.0"), text);
            assertTrue(text.contains("cache_puts_total{cache=\"metrics-test\"} 11.0"), text);
            assertTrue(text.contains("cache_evictions_by_cause_total{cache=\"metrics-test\",cause=\"expired\"} 1.0"),
                    text);
            assertTrue(text.contains("cache_load_total{cache=\"metrics-test\",result=\"success\"} 1.0"), text);
            assertTrue(text.contains("cache_capacity_bytes{cache=\"metrics-test\"} 9600.0"), text);
            assertTrue(text.contains("# TYPE cache_size gauge"), text);
            assertTrue(text.contains("# TYPE cache_evictions_total counter"), text);
        }
    }
}
