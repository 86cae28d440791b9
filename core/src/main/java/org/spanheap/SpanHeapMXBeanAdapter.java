package org.spanheap;

/** Serves {@link SpanHeapMXBean} from a heap's {@link SpanHeap#stats()}. */
final class SpanHeapMXBeanAdapter implements SpanHeapMXBean {
    private final SpanHeap heap;
    private final String name;

    SpanHeapMXBeanAdapter(SpanHeap heap, String name) {
        this.heap = heap;
        this.name = name;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public long getReservedBytes() {
        return heap.stats().reservedBytes();
    }

    @Override
    public long getCommittedBytes() {
        return heap.stats().committedBytes();
    }

    @Override
    public long getResidentBytes() {
        return heap.stats().residentBytes();
    }

    @Override
    public long getLiveBytes() {
        return heap.stats().liveBytes();
    }

    @Override
    public long getCachedBytes() {
        return heap.stats().cachedBytes();
    }

    @Override
    public long getLargeBytes() {
        return heap.stats().largeBytes();
    }

    @Override
    public long getLargeCount() {
        return heap.stats().largeCount();
    }

    @Override
    public long getLimitBytes() {
        return heap.stats().limitBytes();
    }

    @Override
    public long getLimitedBytes() {
        return heap.stats().limitedBytes();
    }

    @Override
    public long getSpansCarved() {
        return heap.stats().spansCarved();
    }

    @Override
    public long getSpansHot() {
        return heap.stats().spansHot();
    }

    @Override
    public long getSpansFloating() {
        return heap.stats().spansFloating();
    }

    @Override
    public long getSpansReusable() {
        return heap.stats().spansReusable();
    }

    @Override
    public long getSpansFree() {
        return heap.stats().spansFree();
    }

    @Override
    public long getMadviseCalls() {
        return heap.stats().madviseCalls();
    }
}
