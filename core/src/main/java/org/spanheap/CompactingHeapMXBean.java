package org.spanheap;

/**
 * A {@link CompactingHeap}'s figures for JMX tools, registered with
 * {@link CompactingHeap#registerMXBean(String)} under
 * {@code org.spanheap:type=CompactingHeap,name="<name>"} and unregistered by
 * {@link CompactingHeap#close()}. Each attribute is read from a fresh
 * {@link CompactingHeap#stats()} snapshot (which waits for a compaction round
 * in progress); see {@link CompactingHeapStats} for what the figures mean.
 */
public interface CompactingHeapMXBean {
    /** {@return the name the MXBean was registered with} */
    String getName();

    /** {@return {@link CompactingHeapStats#liveBytes()}} */
    long getLiveBytes();

    /** {@return {@link CompactingHeapStats#liveObjects()}} */
    long getLiveObjects();

    /** {@return {@link CompactingHeapStats#blockBytes()}} */
    long getBlockBytes();

    /** {@return {@link CompactingHeapStats#committedBytes()}} */
    long getCommittedBytes();

    /** {@return {@link CompactingHeap#residentBytes()}: asked of the OS at every read} */
    long getResidentBytes();

    /** {@return {@link CompactingHeapStats#pages()}} */
    long getPages();

    /** {@return {@link CompactingHeapStats#largeObjects()}} */
    long getLargeObjects();

    /** {@return {@link CompactingHeapStats#largeBytes()}} */
    long getLargeBytes();

    /** {@return {@link CompactingHeapStats#maxNotFullPages()}, to compare with {@link #getNotFullPagesPerClass()}} */
    int getMaxNotFullPages();

    /** {@return the partial compaction bound, {@link CompactingHeap#notFullPagesPerClass()}} */
    int getNotFullPagesPerClass();

    /** {@return {@link CompactingHeapStats#sizeClassFragmentationBytes()}} */
    long getSizeClassFragmentationBytes();

    /** {@return {@link CompactingHeapStats#pendingReclaimBytes()}} */
    long getPendingReclaimBytes();

    /** {@return {@link CompactingHeapStats#fragmentation()}} */
    double getFragmentation();

    /** {@return {@link CompactingHeapStats#movedBytes()}} */
    long getMovedBytes();

    /** {@return {@link CompactingHeapStats#compactionIncrements()}} */
    long getCompactionIncrements();

    /** {@return {@link CompactingHeapStats#epochs()}} */
    long getEpochs();

    /** {@return {@link CompactingHeapStats#maxIncrementNanos()}} */
    long getMaxIncrementNanos();

    /** {@return {@link CompactingHeapStats#totalIncrementNanos()}} */
    long getTotalIncrementNanos();

    /** {@return {@link CompactingHeapStats#maxEpochCloseNanos()}} */
    long getMaxEpochCloseNanos();
}
