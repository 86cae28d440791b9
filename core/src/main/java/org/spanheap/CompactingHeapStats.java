package org.spanheap;

/**
 * A snapshot of a {@link CompactingHeap}'s memory and compaction counters.
 * Taken while other threads may allocate and free, so the figures of one
 * snapshot may be a few operations apart.
 *
 * @param liveBytes bytes requested by live objects (large ones included)
 * @param liveObjects live objects (large ones included)
 * @param blockBytes bytes of the blocks and mappings holding live objects,
 *        freed objects not yet reclaimed, and reclaimed blocks kept with their
 *        handle entries for the next allocations of their class; at least
 *        {@code liveBytes}
 * @param committedBytes bytes the heap holds from the OS: its pages plus the
 *        mappings of large objects and the resident runs of its large segments (not
 *        the runs given back lazily, which the OS may take at any moment)
 * @param pages pages the heap holds
 * @param largeObjects live objects too large for a size class, mapped one by one
 * @param largeBytes bytes mapped for large objects (live or not yet reclaimed)
 * @param notFullPages not-full pages per size class, summed over its
 *        allocation lanes (at most kappa per lane after
 *        every operation when frees reclaim at once, and after every
 *        compaction round otherwise)
 * @param sizeClassFragmentationBytes free bytes in not-full pages
 *        (Compact-fit's size-class fragmentation)
 * @param pendingReclaimBytes bytes of freed objects waiting for the next
 *        epoch change before their memory can be reused
 * @param movedBytes bytes moved by compaction since creation
 * @param compactionIncrements compaction rounds that moved objects since creation
 * @param epochs epochs closed since creation
 * @param maxIncrementNanos longest compaction round (what accesses to the
 *        moving objects may wait)
 * @param totalIncrementNanos time spent in compaction rounds
 * @param maxEpochCloseNanos longest epoch close (the arena handshake)
 */
public record CompactingHeapStats(long liveBytes, long liveObjects, long blockBytes, long committedBytes, long pages,
        long largeObjects, long largeBytes, int[] notFullPages, long sizeClassFragmentationBytes,
        long pendingReclaimBytes, long movedBytes, long compactionIncrements, long epochs, long maxIncrementNanos,
        long totalIncrementNanos, long maxEpochCloseNanos) {

    /** {@return fragmentation: {@code 1 - liveBytes / committedBytes}, 0 for an empty heap} */
    public double fragmentation() {
        return committedBytes == 0 ? 0.0 : 1.0 - (double) liveBytes / committedBytes;
    }

    /** {@return committed bytes per live byte ({@code committedBytes / liveBytes}), 0 for an empty heap} */
    public double committedPerLive() {
        return liveBytes == 0 ? 0.0 : (double) committedBytes / liveBytes;
    }

    /** {@return the largest entry of {@link #notFullPages()}} */
    public int maxNotFullPages() {
        int m = 0;
        for (int n : notFullPages) {
            m = Math.max(m, n);
        }
        return m;
    }
}
