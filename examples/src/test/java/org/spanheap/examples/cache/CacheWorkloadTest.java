package org.spanheap.examples.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

class CacheWorkloadTest {

    @Test
    void theCheckCatchesATornValue() {
        byte[] v = CacheWorkload.value(42, false, new SplittableRandom(1));
        assertTrue(CacheWorkload.isWhole(42, MemorySegment.ofArray(v)));
        assertFalse(CacheWorkload.isWhole(43, MemorySegment.ofArray(v)));
        v[v.length - 1] ^= 1;
        assertFalse(CacheWorkload.isWhole(42, MemorySegment.ofArray(v)));
    }

    @Test
    void aShortRunReadsOnlyWholeValuesAndStaysWithinTheCapacity() throws InterruptedException {
        ByteArrayOutputStream lines = new ByteArrayOutputStream();
        CacheWorkload w = new CacheWorkload(2.5, 2, 20_000, 1.0);
        try (OffHeapCache<Long, byte[]> cache = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(16 << 20).build()) {
            CacheWorkload.Result r = w.run("test", cache, new PrintStream(lines, true, StandardCharsets.UTF_8));
            assertEquals(0, r.errors());
            assertTrue(r.opsPerSecond() > 0);
            assertTrue(r.hitRatio() > 0.3, "hit ratio " + r.hitRatio());
            cache.cleanUp();
            assertTrue(cache.stats().weightedBytes() <= 16 << 20);
            cache.clear();
            assertEquals(0, cache.stats().liveBytes());
        }
        assertTrue(lines.toString(StandardCharsets.UTF_8).contains("large"), lines.toString(StandardCharsets.UTF_8));
    }
}
