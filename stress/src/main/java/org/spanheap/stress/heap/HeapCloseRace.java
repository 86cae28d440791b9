package org.spanheap.stress.heap;

import org.spanheap.SpanHeap;

/**
 * The closer's and the arbiter's parts of the jcstress tests in which a heap's close races
 * its use on another thread ({@link HeapCloseTest}, {@link KeptLargeBlockCloseTest},
 * {@link ArenaHeapCloseTest}).
 */
final class HeapCloseRace {
    private HeapCloseRace() {
    }

    /** The closer: {@return 1 after closing {@code h}, 0 if the user had not published it yet (null)} */
    static int closeIfPublished(SpanHeap h) {
        if (h == null) {
            return 0;
        }
        h.close();
        return 1;
    }

    /** The arbiter: {@return 0 if {@code h} is closed and refuses an allocation, 1 otherwise} */
    static int refusesAllocationOnceClosed(SpanHeap h) {
        if (h == null || h.isOpen()) {
            return 1;
        }
        try {
            h.allocate(16);
            return 1;
        } catch (IllegalStateException e) {
            return 0;
        }
    }
}
