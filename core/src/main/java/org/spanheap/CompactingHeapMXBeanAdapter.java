package org.spanheap;

/** Serves {@link CompactingHeapMXBean} from a heap's {@link CompactingHeap#stats()}. */
final class CompactingHeapMXBeanAdapter implements CompactingHeapMXBean {
    private final CompactingHeap heap;
    private final String name;

    CompactingHeapMXBeanAdapter(CompactingHeap heap, String name) {
        this.heap = heap;
        this.name = name;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public long getLiveBytes() {
        return heap.stats().liveBytes();
    }

    @Override
    public long getLiveObjects() {
        return heap.stats().liveObjects();
    }

    @Override
    public long getBlockBytes() {
        return heap.stats().blockBytes();
    }

    @Override
    public long getCommittedBytes() {
        return heap.stats().committedBytes();
    }

    @Override
    public long getResidentBytes() {
        return heap.residentBytes();
    }

    @Override
    public long getPages() {
        return heap.stats().pages();
    }

    @Override
    public long getLargeObjects() {
        return heap.stats().largeObjects();
    }

    @Override
    public long getLargeBytes() {
        return heap.stats().largeBytes();
    }

    @Override
    public int getMaxNotFullPages() {
        return heap.stats().maxNotFullPages();
    }

    @Override
    public int getNotFullPagesPerClass() {
        return heap.notFullPagesPerClass();
    }

    @Override
    public long getSizeClassFragmentationBytes() {
        return heap.stats().sizeClassFragmentationBytes();
    }

    @Override
    public long getPendingReclaimBytes() {
        return heap.stats().pendingReclaimBytes();
    }

    @Override
    public double getFragmentation() {
        return heap.stats().fragmentation();
    }

    @Override
    public long getMovedBytes() {
        return heap.stats().movedBytes();
    }

    @Override
    public long getCompactionIncrements() {
        return heap.stats().compactionIncrements();
    }

    @Override
    public long getEpochs() {
        return heap.stats().epochs();
    }

    @Override
    public long getMaxIncrementNanos() {
        return heap.stats().maxIncrementNanos();
    }

    @Override
    public long getTotalIncrementNanos() {
        return heap.stats().totalIncrementNanos();
    }

    @Override
    public long getMaxEpochCloseNanos() {
        return heap.stats().maxEpochCloseNanos();
    }
}
