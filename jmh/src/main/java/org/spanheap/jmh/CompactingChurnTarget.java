package org.spanheap.jmh;

import org.spanheap.CompactingHeap;

/**
 * The memory churn on spanheap's {@link CompactingHeap}: blocks are handles (boxed, which costs
 * the churn's Java heap a little, not the off-heap figures). Two variants: compaction on (the
 * default kappa, and {@code compact()} after the big free) and off ({@code NOT_FULL_PAGES_UNBOUNDED}, no
 * {@code compact()}), so the effect of compaction is measured on the same heap. All use of the
 * compacting heap's API by the suite is in this file.
 */
final class CompactingChurnTarget implements ChurnTarget {

    private final CompactingHeap heap;
    private final boolean compact;

    CompactingChurnTarget(boolean compact) {
        this.heap = compact
                ? CompactingHeap.create()
                : CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build();
        this.compact = compact;
    }

    @Override
    public Object allocate(long size) {
        return heap.allocate(size);
    }

    @Override
    public void fill(Object block, long size, byte value) {
        heap.write((Long) block, s -> s.asSlice(0, size).fill(value));
    }

    @Override
    public void free(Object block) {
        heap.free((Long) block);
    }

    @Override
    public long committedBytes() {
        return heap.stats().committedBytes();
    }

    @Override
    public void afterFree() {
        if (compact) {
            heap.compact();
        }
    }

    @Override
    public void close() {
        heap.close();
    }
}
