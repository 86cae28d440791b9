package org.spanheap.stress.compact;

import org.spanheap.CompactingHeap;

/**
 * The compacting heaps the jcstress tests of the handle/compaction protocol
 * share: one of each per forked VM (a heap per state would map pages for every
 * one of the millions of states).
 */
final class CompactHeaps {

    /**
     * Reclaims on every free in the freeing thread (no background thread), so
     * that a freed block and its handle index are reusable as soon as the free returns.
     */
    static final CompactingHeap HEAP = CompactingHeap.builder().notFullPagesPerClass(1).reclaimBatchBytes(0).build();

    /**
     * The default set-up: frees batched (a batch of 64 bytes, so rounds are
     * frequent) and reclaimed by the background thread, whose rounds race with
     * the actors.
     */
    static final CompactingHeap BATCHED = CompactingHeap.builder().notFullPagesPerClass(1).reclaimBatchBytes(64).build();

    /**
     * As {@link #BATCHED}, with the small classes allocated from thread-owned pages
     * ({@link CompactingHeap.Builder#threadOwnedPages}).
     */
    static final CompactingHeap OWNED = CompactingHeap.builder().notFullPagesPerClass(1).reclaimBatchBytes(64)
            .threadOwnedPages(true).build();

    private CompactHeaps() {
    }
}
