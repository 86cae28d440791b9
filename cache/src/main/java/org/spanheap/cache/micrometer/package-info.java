/**
 * Micrometer binders for {@link org.spanheap.cache.OffHeapCache}: {@link
 * org.spanheap.cache.micrometer.OffHeapCacheMetrics}. Needs {@code io.micrometer:micrometer-core}
 * on the class or module path, an optional dependency of this module.
 */
package org.spanheap.cache.micrometer;
