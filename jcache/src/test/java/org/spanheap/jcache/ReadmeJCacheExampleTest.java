package org.spanheap.jcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import javax.cache.Cache;
import javax.cache.CacheManager;
import javax.cache.Caching;
import org.junit.jupiter.api.Test;
import org.spanheap.cache.OffHeapCache;

/** The README's JCache example, as it is written there, and what it promises. */
class ReadmeJCacheExampleTest {

    @Test
    void theReadmeExampleCreatesAnOffHeapCacheThroughJCache() {
        CacheManager manager = Caching.getCachingProvider().getCacheManager();
        try {
            Cache<String, byte[]> pages = Caching.getCachingProvider().getCacheManager().createCache("pages",
                    new OffHeapConfiguration<String, byte[]>().setCapacity(256L << 20).setTypes(String.class, byte[].class));
            pages.put("/", new byte[] {1, 2, 3});
            assertArrayEquals(new byte[] {1, 2, 3}, pages.get("/"));
            assertEquals(256L << 20, pages.unwrap(OffHeapCache.class).capacity());
        } finally {
            manager.destroyCache("pages");
        }
    }
}
