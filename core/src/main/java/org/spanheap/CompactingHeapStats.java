package org.spanheap;

/**
 * A snapshot of a {@link CompactingHeap}'s memory and compaction counters.
 *
 * @param liveBytes bytes requested by live objects
 * @param liveObjects live objects
 * @param blockBytes bytes of the blocks holding live objects (and freed blocks
 *        not yet reclaimed), at least {@code liveBytes}
 * @param committedBytes bytes of the pages the heap holds
 * @param pages pages the heap holds
 * @param notFullPages not-full pages per size class (at most kappa after
 *        every operation when the heap is used by one thread)
 * @param sizeClassFragmentationBytes free bytes in not-full pages
 *        (Compact-fit's size-class fragmentation)
 * @param movedBytes bytes moved by compaction since creation
 * @param compactionIncrements compaction increments since creation
 * @param epochs epochs closed since creation
 * @param maxIncrementNanos longest compaction increment (the pause other
 *        threads' allocate/free, and accesses to the moving objects, may see)
 * @param totalIncrementNanos time spent in compaction increments
 * @param maxEpochCloseNanos longest epoch close (arena handshake)
 */
public record CompactingHeapStats(long liveBytes, long liveObjects, long blockBytes, long committedBytes, long pages,
        int[] notFullPages, long sizeClassFragmentationBytes, long movedBytes, long compactionIncrements, long epochs,
        long maxIncrementNanos, long totalIncrementNanos, long maxEpochCloseNanos) {

    /** Fragmentation: {@code 1 - liveBytes / committedBytes}, 0 for an empty heap. */
    public double fragmentation() {
        return committedBytes == 0 ? 0.0 : 1.0 - (double) liveBytes / committedBytes;
    }

    /** Committed bytes per live byte ({@code committedBytes / liveBytes}), 0 for an empty heap. */
    public double committedPerLive() {
        return liveBytes == 0 ? 0.0 : (double) committedBytes / liveBytes;
    }

    /** Largest entry of {@link #notFullPages()}. */
    public int maxNotFullPages() {
        int m = 0;
        for (int n : notFullPages) {
            m = Math.max(m, n);
        }
        return m;
    }
}
