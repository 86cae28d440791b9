package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

/**
 * A heap that goes quiet meets its not-full page bound for every page, through its own
 * background thread: after a churn of mixed sizes (bound 3, 4 KiB pages, a 16 KiB reclaim
 * batch, one lane), once nothing is allocated or freed, no class keeps more than 3 not-full
 * pages, and every survivor reads back. Passes under load alone leave pages more than two
 * thirds used or younger than the interval not-full for good.
 */
class CompactingHeapRestBoundTest {

    private static final int BOUND = 3;

    @Test
    void theBoundHoldsForEveryPageOnceTheHeapIsQuiet() throws InterruptedException {
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(BOUND).pageSize(4096)
                .reclaimBatchBytes(16 << 10).allocationLanes(1).compactionInterval(Duration.ofMillis(100)).build()) {
            Random rnd = new Random(7);
            List<long[]> live = new ArrayList<>(); // {handle, value}
            for (int op = 0; op < 20_000; op++) {
                if (!live.isEmpty() && rnd.nextInt(100) < 45) {
                    long[] victim = live.remove(rnd.nextInt(live.size()));
                    heap.free(victim[0]);
                } else {
                    long h = heap.allocate(16 + rnd.nextInt(1000));
                    long value = rnd.nextLong();
                    heap.setLong(h, 0, value);
                    live.add(new long[] {h, value});
                }
            }
            // quiet from here: the background thread reclaims, notices rest and compacts
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            int[] notFull;
            do {
                Thread.sleep(20);
                notFull = heap.stats().notFullPages();
            } while (Arrays.stream(notFull).max().orElse(0) > BOUND && System.nanoTime() < deadline);

            CompactingHeapStats st = heap.stats();
            assertEquals(0, st.pendingReclaimBytes(), "every free reclaimed");
            for (int c = 0; c < notFull.length; c++) {
                assertTrue(notFull[c] <= BOUND, "class of " + heap.blockSize(c) + " B: " + notFull[c]
                        + " not-full pages > bound " + BOUND + " on a quiet heap: " + Arrays.toString(notFull));
            }
            for (long[] v : live) {
                assertEquals(v[1], heap.getLong(v[0], 0), "survivor intact after the rest pass");
            }
        }
    }
}
