package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.spanheap.StaleHandleException;

/**
 * Freed entries reused with their slots ({@link ReadyEntries}), driven tick by tick on a heap
 * without the background thread whose rounds hand freed entries to their lanes as the thread's
 * do: the entry goes to the next allocation of its class with the slot its block held, under a
 * new generation; its block stays counted in its page until then, and goes back to the page
 * before a compaction, on {@code trim()}, and once it has waited {@link ReadyEntries#MAX_AGE_NANOS}.
 * Blocks of 1 KiB in 4 KiB pages: four per page, allocated in order.
 */
class ReadyEntriesTest {

    private static final int BLOCK = 1024;
    private static final long NO_PASS = Long.MAX_VALUE / 4;

    /** A reclaim batch no test reaches (frees wait for a tick), no compaction pass under load. */
    private static CompactFitHeap heap() {
        return CompactFitHeap.withoutBackgroundThreadReusingEntries(4096, 1, 256 << 10, 1L << 40, NO_PASS);
    }

    private static long[] allocate(CompactFitHeap heap, int n) {
        long[] h = new long[n];
        for (int i = 0; i < n; i++) {
            h[i] = heap.allocate(BLOCK, null, null);
            heap.resolve(h[i]).set(ValueLayout.JAVA_LONG, 0, 100 + i);
        }
        return h;
    }

    private static int notFull(CompactFitHeap heap) {
        return NotFullPages.ofBlock(heap, BLOCK);
    }

    @Test
    void theNextAllocationTakesTheFreedEntryWithItsSlotUnderANewGeneration() {
        CompactFitHeap heap = heap();
        try {
            long[] h = allocate(heap, 8);
            long address = heap.resolve(h[2]).address();
            heap.free(h[2]);
            assertTrue(heap.backgroundTick(true), "the tick reclaims the free");
            assertEquals(7, heap.stats().liveObjects(), "counted released at the round");
            assertEquals(0, notFull(heap), "its page still counts the block: no page was touched");

            long again = heap.allocate(BLOCK, null, null);
            assertEquals((int) h[2], (int) again, "the same index");
            assertNotEquals(h[2], again, "under a new generation");
            assertEquals(address, heap.resolve(again).address(), "in the same slot");
            assertEquals(0, heap.resolve(again).get(ValueLayout.JAVA_LONG, 0), "zeroed as any new object");
            assertThrows(StaleHandleException.class, () -> heap.resolve(h[2]), "the freed handle stays stale");
            assertEquals(8, heap.stats().liveObjects());
            for (int i = 0; i < h.length; i++) {
                if (i != 2) {
                    assertEquals(100 + i, heap.resolve(h[i]).get(ValueLayout.JAVA_LONG, 0), "object " + i + " intact");
                }
            }
        } finally {
            heap.close();
        }
    }

    @Test
    void statisticsCountAFreeAsPendingUntilItsRoundAndAsFreedWhileItWaitsForReuse() {
        CompactFitHeap heap = heap();
        try {
            long[] h = allocate(heap, 8);
            heap.free(h[1]);
            heap.free(h[6]);
            var before = heap.stats();
            assertEquals(6, before.liveObjects(), "the frees on their lane's stack are not live");
            assertEquals(6 * BLOCK, before.liveBytes());
            assertEquals(2 * BLOCK, before.pendingReclaimBytes(), "they wait for an epoch change");
            assertTrue(heap.backgroundTick(true), "the tick hands them to the lane whole");
            var after = heap.stats();
            assertEquals(6, after.liveObjects());
            assertEquals(6 * BLOCK, after.liveBytes());
            assertEquals(0, after.pendingReclaimBytes(), "their epoch closed");
            assertEquals(8 * BLOCK, after.blockBytes(), "their blocks are still held, for the next allocations");
            heap.allocate(BLOCK, null, null);
            assertEquals(7, heap.stats().liveObjects(), "one reused");
            heap.trim();
            var trimmed = heap.stats();
            assertEquals(7, trimmed.liveObjects());
            assertEquals(7 * BLOCK, trimmed.blockBytes(), "the other one's block went back to its page");
        } finally {
            heap.close();
        }
    }

    @Test
    void compactGivesTheirSlotsBackAndEmptiesThePages() {
        CompactFitHeap heap = heap();
        try {
            for (long x : allocate(heap, 8)) {
                heap.free(x);
            }
            assertTrue(heap.backgroundTick(true));
            assertEquals(0, heap.stats().liveObjects());
            assertEquals(2, heap.stats().pages(), "the entries wait for reuse in their slots");
            heap.compact();
            assertEquals(0, heap.stats().pages(), "compact() released them: both pages empty");
        } finally {
            heap.close();
        }
    }

    @Test
    void trimGivesTheirSlotsBack() {
        CompactFitHeap heap = heap();
        try {
            long committed = heap.stats().committedBytes();
            for (long x : allocate(heap, 8)) {
                heap.free(x);
            }
            assertTrue(heap.backgroundTick(true));
            assertEquals(2, heap.stats().pages());
            heap.trim();
            assertEquals(0, heap.stats().pages());
            assertEquals(committed, heap.stats().committedBytes(), "the pages went back");
        } finally {
            heap.close();
        }
    }

    @Test
    void entriesLeftUnusedGoBackToTheirPagesAfterTheirAge() throws InterruptedException {
        CompactFitHeap heap = heap();
        try {
            long[] h = allocate(heap, 8);
            for (int i = 0; i < 4; i++) {
                heap.free(h[i]); // the first page's blocks
            }
            assertTrue(heap.backgroundTick(true));
            assertEquals(2, heap.stats().pages());
            Thread.sleep(ReadyEntries.MAX_AGE_NANOS / 1_000_000 + 5);
            assertTrue(heap.hasWork(true), "the idle tick has ready entries to age");
            heap.backgroundTick(true);
            assertEquals(1, heap.stats().pages(), "aged out: the first page emptied");
            for (int i = 4; i < 8; i++) {
                assertEquals(100 + i, heap.resolve(h[i]).get(ValueLayout.JAVA_LONG, 0), "object " + i + " intact");
            }
        } finally {
            heap.close();
        }
    }

    /**
     * Randomized, one thread: frees that fill the (small) reclaim batch run rounds with moves
     * in the freeing thread, which plan with ready entries still in the pages; with ticks,
     * {@code compact()}, {@code trim()} and {@code relocate()} between them, every live object
     * keeps its bytes, and at the end every page goes back (a {@code compact()} that gave the
     * ready entries back before its own reclaim, not after, left pages behind).
     */
    @Test
    void randomOperationsKeepEveryObjectAndGiveEveryPageBack() {
        for (long seed = 1; seed <= 4; seed++) {
            SplittableRandom r = new SplittableRandom(seed);
            CompactFitHeap heap = CompactFitHeap.withoutBackgroundThreadReusingEntries(4096, 1, 2048, 4096, 0);
            try {
                List<long[]> live = new ArrayList<>(); // {handle, size, pattern}
                for (int op = 0; op < 20_000; op++) {
                    int k = r.nextInt(100);
                    if (k < 52 || live.isEmpty()) {
                        int size = r.nextInt(3) == 0 ? 16 + r.nextInt(113) : 129 + r.nextInt(900);
                        long pattern = r.nextLong();
                        long h = heap.allocate(size, null, null);
                        fill(heap.resolve(h), pattern);
                        live.add(new long[] {h, size, pattern});
                    } else if (k < 96) {
                        long[] o = live.remove(r.nextInt(live.size()));
                        check(heap, o);
                        heap.free(o[0]);
                    } else if (k < 98) {
                        heap.backgroundTick(r.nextBoolean());
                    } else if (k < 99) {
                        heap.relocate(live.get(r.nextInt(live.size()))[0]);
                    } else if (r.nextBoolean()) {
                        heap.compact();
                    } else {
                        heap.trim();
                    }
                }
                for (long[] o : live) {
                    check(heap, o);
                    heap.free(o[0]);
                }
                heap.compact();
                assertEquals(0, heap.stats().liveObjects(), "seed " + seed);
                assertEquals(0, heap.stats().pages(), "seed " + seed + ": every page went back");
            } finally {
                heap.close();
            }
        }
    }

    private static void fill(MemorySegment s, long pattern) {
        for (long at = 0; at + 8 <= s.byteSize(); at += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, pattern + at);
        }
    }

    private static void check(CompactFitHeap heap, long[] o) {
        MemorySegment s = heap.resolve(o[0]);
        assertEquals(o[1], s.byteSize());
        for (long at = 0; at + 8 <= s.byteSize(); at += 8) {
            if (s.get(ValueLayout.JAVA_LONG_UNALIGNED, at) != o[2] + at) {
                throw new AssertionError("object of " + o[1] + " bytes changed at byte " + at);
            }
        }
    }
}
