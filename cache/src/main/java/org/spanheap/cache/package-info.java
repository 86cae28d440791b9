/**
 * {@link org.spanheap.cache.OffHeapCache}: a bounded cache of off-heap values on
 * a compacting heap, with Caffeine's W-TinyLFU policy, expiry, loaders, a
 * removal listener and statistics.
 */
package org.spanheap.cache;
