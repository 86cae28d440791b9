package org.spanheap.cache;

/**
 * What the index holds per entry: the value's handle in the cache's compacting
 * heap and the bytes the entry is charged. The handle is freed exactly once, by
 * the removal notification of the entry that held it.
 */
record StoredValue(long handle, int weight) {}
