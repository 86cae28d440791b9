package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

/**
 * A background pass empties only pages at most two thirds used; {@code compact()}
 * empties any. Blocks of 1 KiB in 4 KiB pages: four per page, allocated in order.
 */
class CompactingHeapPassSourcesTest {

    private static final int BLOCK = 1024;

    private static CompactingHeap heap() {
        return CompactingHeap.builder().pageSize(4096).kappa(1).allocationLanes(1)
                .compactionInterval(Duration.ZERO).build();
    }

    /** Two pages of four blocks; then frees {@code freeFromFirst} and {@code freeFromSecond} of their blocks. */
    private static long[] twoPages(CompactingHeap heap, int freeFromFirst, int freeFromSecond) {
        long[] h = new long[8];
        for (int i = 0; i < h.length; i++) {
            h[i] = heap.allocate(BLOCK);
            heap.setLong(h[i], 0, i);
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

    private static int notFull(CompactingHeap heap) {
        for (int c = 0; c < heap.sizeClassCount(); c++) {
            if (heap.blockSize(c) == BLOCK) {
                return heap.stats().notFullPages()[c];
            }
        }
        throw new AssertionError("no class of " + BLOCK + " bytes");
    }

    /** Waits until the background thread has reclaimed every free. */
    private static void reclaimed(CompactingHeap heap) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (heap.stats().pendingReclaimBytes() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, heap.stats().pendingReclaimBytes(), "the frees were reclaimed");
    }

    @Test
    void aPassLeavesPagesThreeQuartersUsedAndCompactTakesThem() throws InterruptedException {
        try (CompactingHeap heap = heap()) {
            long[] h = twoPages(heap, 1, 1); // both pages three quarters used: two not-full pages, kappa 1
            reclaimed(heap);
            Thread.sleep(300); // passes run at once (interval 0): time for several
            assertEquals(2, notFull(heap), "no pass emptied a page three quarters used");
            assertEquals(0, heap.stats().movedBytes());

            heap.compact();
            CompactingHeapStats st = heap.stats();
            assertTrue(st.movedBytes() > 0, "compact() moved");
            assertTrue(notFull(heap) <= 1, "compact() restored kappa");
            for (int i = 0; i < h.length; i++) {
                if (h[i] != 0) {
                    assertEquals(i, heap.getLong(h[i], 0), "object " + i + " intact after the move");
                }
            }
        }
    }

    @Test
    void aPassEmptiesAPageAQuarterUsed() throws InterruptedException {
        try (CompactingHeap heap = heap()) {
            long[] h = twoPages(heap, 1, 3); // a page three quarters used, one a quarter used
            reclaimed(heap);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (notFull(heap) > 1 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(0, notFull(heap), "a background pass moved the sparse page's block into the other's hole");
            assertTrue(heap.stats().movedBytes() >= BLOCK);
            for (int i = 0; i < h.length; i++) {
                if (h[i] != 0) {
                    assertEquals(i, heap.getLong(h[i], 0));
                }
            }
        }
    }
}
