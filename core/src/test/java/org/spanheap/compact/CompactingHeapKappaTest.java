package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

/**
 * Randomized single-threaded runs without the background thread (so the
 * freeing thread runs the rounds): after every allocate, free and compact
 * the not-full pages of every size class are at most kappa, and every live
 * object still holds what was written to it (compaction moved it intact).
 * Sizes reach half a page, so large objects (over a quarter page) take part.
 */
class CompactingHeapKappaTest {

    @ParameterizedTest(name = "kappa={0} iota={1} reclaimBatch={2} pageSize={3}")
    @CsvSource({
            "1, 64, 0, 4096",
            "2, 1024, 0, 4096",
            "4, 65536, 0, 8192",
            "1, 1, 4096, 4096",
            "3, 512, 65536, 16384",
    })
    void boundHoldsAfterEveryOperation(int kappa, long iota, long reclaimBatch, long pageSize) {
        Random rnd = new Random(kappa * 31L + iota + reclaimBatch);
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(kappa).movedBytesPerRound(iota).reclaimBatchBytes(reclaimBatch)
                .pageSize(pageSize).backgroundCompaction(false).build()) {
            List<long[]> live = new ArrayList<>(); // {handle, size, seed}
            int ops = 12_000;
            for (int op = 0; op < ops; op++) {
                int r = rnd.nextInt(100);
                if (r < 55 || live.isEmpty()) {
                    long size = rnd.nextInt(4) == 0 ? rnd.nextInt((int) pageSize / 2 + 1) : 8 + rnd.nextInt(120);
                    long h = heap.allocate(size);
                    long seed = rnd.nextLong();
                    fill(heap, h, size, seed);
                    live.add(new long[] {h, size, seed});
                } else if (r < 99) {
                    long[] o = live.remove(rnd.nextInt(live.size()));
                    check(heap, o);
                    heap.free(o[0]);
                } else {
                    heap.compact();
                    assertTrue(heap.stats().maxNotFullPages() <= 1, "after compact()");
                }
                CompactingHeapStats st = heap.stats();
                int[] nf = st.notFullPages();
                for (int c = 0; c < nf.length; c++) {
                    if (nf[c] > kappa) {
                        fail("op " + op + ": class " + c + " (block " + heap.blockSize(c) + ") has " + nf[c]
                                + " not-full pages > kappa " + kappa);
                    }
                }
                if (op % 1000 == 0) {
                    for (long[] o : live) {
                        check(heap, o);
                    }
                }
            }
            for (long[] o : live) {
                check(heap, o);
            }
            CompactingHeapStats st = heap.stats();
            assertTrue(st.movedBytes() > 0, "the run made compaction move something");
            assertEquals(live.size(), st.liveObjects());
            for (long[] o : live) {
                heap.free(o[0]);
            }
            heap.compact();
            assertEquals(0, heap.stats().pages(), "all pages went back");
        }
    }

    static void fill(CompactingHeap heap, long h, long size, long seed) {
        heap.write(h, s -> {
            Random r = new Random(seed);
            for (long i = 0; i < size; i++) {
                s.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            }
        });
    }

    static void check(CompactingHeap heap, long[] o) {
        long h = o[0], size = o[1], seed = o[2];
        assertEquals(size, heap.size(h));
        heap.read(h, s -> {
            Random r = new Random(seed);
            for (long i = 0; i < size; i++) {
                if (s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != (byte) r.nextInt()) {
                    fail("object " + Long.toHexString(h) + " byte " + i + " changed");
                }
            }
            return null;
        });
    }
}
