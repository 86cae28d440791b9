/**
 * {@link org.spanheap.cache.OffHeapCache}: a bounded cache of off-heap values on
 * a compacting heap, with a W-TinyLFU policy (Caffeine's, in an index of its own), expiry, loaders, a
 * removal listener and statistics.
 */
package org.spanheap.cache;
