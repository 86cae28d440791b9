package org.spanheap.stress.compact;

import org.spanheap.CompactingHeap;

/**
 * The compacting heap the jcstress tests of the handle/compaction protocol
 * share: one per forked VM (a heap per state would map pages for every one of
 * the millions of states). Reclaim on every free, so that a freed block and
 * its handle index are reusable as soon as the free returns.
 */
final class CompactHeaps {

    static final CompactingHeap HEAP = CompactingHeap.builder().kappa(1).reclaimBatchBytes(0).build();

    private CompactHeaps() {
    }
}
