/**
 * Micrometer binders for the heaps: {@link org.spanheap.micrometer.SpanHeapMetrics} and
 * {@link org.spanheap.micrometer.CompactingHeapMetrics}. Needs {@code io.micrometer:micrometer-core}
 * on the class or module path, an optional dependency of this module.
 */
package org.spanheap.micrometer;
