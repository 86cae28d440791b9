/**
 * Micrometer binders for the heaps: {@link org.spanheap.micrometer.SpanHeapMetrics},
 * {@link org.spanheap.micrometer.ThreadCacheDrainMetrics} (drained caches of ended threads),
 * {@link org.spanheap.micrometer.CompactingHeapMetrics} and
 * {@link org.spanheap.micrometer.CompactionPauseMetrics} (each compaction round, with percentiles). Needs {@code io.micrometer:micrometer-core}
 * on the class or module path, an optional dependency of this module.
 */
package org.spanheap.micrometer;
