package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * Which pages the background thread empties, driven tick by tick ({@link CompactFitHeap#backgroundTick})
 * on a heap without the thread: under load a pass takes only pages at most two thirds used; at
 * rest (nothing allocated or freed since the last tick, nothing waiting) it takes any, so the
 * not-full page bound holds for every page; {@code compact()} takes any at once. Blocks of
 * 1 KiB in 4 KiB pages: four per page, allocated in order; bound 1, pass interval 0.
 */
class BackgroundPassTest {

    private static final int BLOCK = 1024;

    /** A reclaim batch no test reaches: frees wait for a tick. */
    private static CompactFitHeap heap() {
        return CompactFitHeap.withoutBackgroundThread(4096, 1, 256 << 10, 1L << 40, 0);
    }

    /** Two pages of four blocks; then frees {@code freeFromFirst} and {@code freeFromSecond} of their blocks. */
    private static long[] twoPages(CompactFitHeap heap, int freeFromFirst, int freeFromSecond) {
        long[] h = new long[8];
        for (int i = 0; i < h.length; i++) {
            h[i] = heap.allocate(BLOCK, null, null);
            heap.resolve(h[i]).set(ValueLayout.JAVA_LONG, 0, i);
        }
        for (int i = 0; i < freeFromFirst; i++) {
            heap.free(h[i]);
            h[i] = 0;
        }
        for (int i = 4; i < 4 + freeFromSecond; i++) {
            heap.free(h[i]);
            h[i] = 0;
        }
        return h;
    }

    private static int notFull(CompactFitHeap heap) {
        return NotFullPages.ofBlock(heap, BLOCK);
    }

    private static void intact(CompactFitHeap heap, long[] h) {
        for (int i = 0; i < h.length; i++) {
            if (h[i] != 0) {
                assertEquals(i, heap.resolve(h[i]).get(ValueLayout.JAVA_LONG, 0), "object " + i + " intact");
            }
        }
    }

    /** The tick that reclaims the frees, then one under load (the release counts as activity). */
    private static void reclaimThenPassUnderLoad(CompactFitHeap heap) {
        assertTrue(heap.backgroundTick(true), "the first tick reclaims the frees");
        assertEquals(0, heap.stats().pendingReclaimBytes());
        heap.backgroundTick(true);
    }

    @Test
    void underLoadAPassLeavesPagesThreeQuartersUsed_atRestItRestoresTheBound() {
        try (CloseableHeap c = new CloseableHeap(heap())) {
            CompactFitHeap heap = c.heap;
            long[] h = twoPages(heap, 1, 1); // both pages three quarters used: two not-full pages, bound 1
            reclaimThenPassUnderLoad(heap);
            assertEquals(2, notFull(heap), "a pass under load left both pages three quarters used");
            assertEquals(0, heap.stats().movedBytes());

            assertTrue(heap.backgroundTick(true), "nothing happened since the last tick: at rest, a round runs");
            assertTrue(heap.stats().movedBytes() > 0, "the rest pass moved");
            assertEquals(1, notFull(heap), "at rest the bound holds for every page");
            intact(heap, h);
            assertTrue(heap.backgroundTick(true), "the next round releases the slots the moves left");
            assertFalse(heap.backgroundTick(true), "bound met at rest: no more rounds");
        }
    }

    @Test
    void activityPostponesTheRestPass() {
        try (CloseableHeap c = new CloseableHeap(heap())) {
            CompactFitHeap heap = c.heap;
            long[] h = twoPages(heap, 1, 1);
            reclaimThenPassUnderLoad(heap);
            heap.free(heap.allocate(100, null, null)); // another class: activity, a free waiting
            assertTrue(heap.backgroundTick(true), "the waiting free is reclaimed");
            assertEquals(2, notFull(heap), "not at rest: nothing emptied");
            heap.backgroundTick(true); // the release was activity: still under load
            assertEquals(2, notFull(heap), "not at rest yet: nothing emptied");
            assertEquals(0, heap.stats().movedBytes());
            assertTrue(heap.backgroundTick(true), "at rest now");
            assertEquals(1, notFull(heap));
            intact(heap, h);
        }
    }

    @Test
    void compactTakesPagesThreeQuartersUsed() {
        try (CloseableHeap c = new CloseableHeap(heap())) {
            CompactFitHeap heap = c.heap;
            long[] h = twoPages(heap, 1, 1);
            reclaimThenPassUnderLoad(heap);
            assertEquals(2, notFull(heap));
            heap.compact();
            assertTrue(heap.stats().movedBytes() > 0, "compact() moved");
            assertTrue(notFull(heap) <= 1, "compact() restored the bound");
            intact(heap, h);
        }
    }

    @Test
    void aPassUnderLoadEmptiesAPageAQuarterUsed() {
        try (CloseableHeap c = new CloseableHeap(heap())) {
            CompactFitHeap heap = c.heap;
            long[] h = twoPages(heap, 1, 3); // a page three quarters used, one a quarter used
            reclaimThenPassUnderLoad(heap);
            assertTrue(heap.backgroundTick(true), "the next round releases the slot the move left");
            assertEquals(0, notFull(heap), "the pass moved the sparse page's block into the other's hole");
            assertTrue(heap.stats().movedBytes() >= BLOCK);
            intact(heap, h);
        }
    }

    /** Closes the heap after a test. */
    private record CloseableHeap(CompactFitHeap heap) implements AutoCloseable {
        @Override
        public void close() {
            heap.close();
        }
    }
}
