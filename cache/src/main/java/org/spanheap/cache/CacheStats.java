package org.spanheap.cache;

/**
 * A snapshot of an {@link OffHeapCache}'s counters and memory.
 *
 * @param hits lookups that found a value
 * @param misses lookups that found none
 * @param puts values stored: by {@code put}, by {@code putIfAbsent} and {@code replace} when they
 *        stored, and by a load
 * @param loads values computed by a loader and stored
 * @param loadFailures loader calls that threw or returned null
 * @param evictions entries evicted to stay within the capacity
 * @param expirations entries removed because their time passed
 * @param entries entries now in the cache
 * @param weightedBytes what the entries are charged against the capacity
 * @param capacityBytes the capacity
 * @param liveBytes bytes of the values now stored off-heap (unrounded)
 * @param committedBytes off-heap memory the cache's heap holds: pages and large mappings
 * @param movedBytes bytes moved by compaction since the cache was built
 * @param compactionRounds compaction rounds run since the cache was built
 */
public record CacheStats(long hits, long misses, long puts, long loads, long loadFailures, long evictions, long expirations,
        long entries, long weightedBytes, long capacityBytes, long liveBytes, long committedBytes, long movedBytes,
        long compactionRounds) {

    /** {@return hits over lookups, or 1.0 when there were no lookups} */
    public double hitRatio() {
        long lookups = hits + misses;
        return lookups == 0 ? 1.0 : (double) hits / lookups;
    }
}
