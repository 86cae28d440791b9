package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

/**
 * Allocation lanes: a class's lanes have pages of their own, a thread takes the
 * lane of its id, and kappa holds per lane.
 */
class CompactingHeapLanesTest {

    @Test
    void lanesAreCheckedAndReported() {
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().allocationLanes(0));
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().allocationLanes(65));
        try (CompactingHeap heap = CompactingHeap.builder().allocationLanes(3).build()) {
            assertEquals(3, heap.allocationLanes());
        }
        try (CompactingHeap heap = CompactingHeap.create()) {
            assertEquals(Math.min(4, Runtime.getRuntime().availableProcessors()), heap.allocationLanes());
        }
    }

    @Test
    void threadsOfDifferentLanesFillPagesOfTheirOwn() throws Exception {
        assertEquals(1, pagesAfterTwoThreads(1), "one lane: both threads share its page");
        assertEquals(2, pagesAfterTwoThreads(2), "two lanes: a page each");
    }

    /** Two threads whose ids fall in different lanes of two allocate 10 objects of 64 B each, one after the other. */
    private static long pagesAfterTwoThreads(int lanes) throws Exception {
        try (CompactingHeap heap = CompactingHeap.builder().allocationLanes(lanes).backgroundCompaction(false)
                .build()) {
            List<Long> handles = new ArrayList<>();
            Thread first = allocator(heap, handles);
            Thread second = allocator(heap, handles);
            while (second.threadId() % 2 == first.threadId() % 2) {
                second = allocator(heap, handles);
            }
            for (Thread t : new Thread[] {first, second}) {
                t.start();
                t.join();
            }
            assertEquals(20, handles.size());
            for (long h : handles) { // each object holds its own handle
                assertEquals(h, (long) heap.read(h, s -> s.get(ValueLayout.JAVA_LONG, 0)));
            }
            long pages = heap.stats().pages();
            for (long h : handles) {
                heap.free(h);
            }
            heap.compact();
            assertEquals(0, heap.stats().pages(), "every page went back");
            return pages;
        }
    }

    private static Thread allocator(CompactingHeap heap, List<Long> handles) {
        return new Thread(() -> {
            for (int i = 0; i < 10; i++) {
                long h = heap.allocate(64);
                heap.write(h, s -> s.set(ValueLayout.JAVA_LONG, 0, h));
                synchronized (handles) {
                    handles.add(h);
                }
            }
        });
    }

    @Test
    void kappaHoldsPerLaneAfterTwoThreadsChurn() throws Exception {
        int kappa = 1, lanes = 2;
        try (CompactingHeap heap = CompactingHeap.builder().allocationLanes(lanes).notFullPagesPerClass(kappa)
                .reclaimBatchBytes(0).pageSize(4096).build()) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Long> survivors = new ArrayList<>();
            Runnable churn = () -> {
                try {
                    List<Long> live = new ArrayList<>();
                    java.util.Random rnd = new java.util.Random(Thread.currentThread().threadId());
                    for (int op = 0; op < 20_000; op++) {
                        if (live.isEmpty() || rnd.nextInt(100) < 55) {
                            long h = heap.allocate(48);
                            heap.write(h, s -> s.set(ValueLayout.JAVA_LONG, 0, h));
                            live.add(h);
                        } else {
                            long h = live.remove(rnd.nextInt(live.size()));
                            assertEquals(h, (long) heap.read(h, s -> s.get(ValueLayout.JAVA_LONG, 0)));
                            heap.free(h);
                        }
                    }
                    synchronized (survivors) {
                        survivors.addAll(live);
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            };
            Thread a = new Thread(churn);
            Thread b = new Thread(churn);
            a.start();
            b.start();
            a.join();
            b.join();
            if (failure.get() != null) {
                throw new AssertionError("a churning thread failed", failure.get());
            }
            // every free restored kappa in every lane, and allocation fills not-full pages before it takes one
            CompactingHeapStats st = heap.stats();
            assertTrue(st.maxNotFullPages() <= kappa * lanes,
                    "at most kappa not-full pages per lane: " + st.maxNotFullPages());
            assertEquals(survivors.size(), st.liveObjects());
            assertTrue(st.pages() >= survivors.size() * 48L / 4096, "the survivors' pages are held");
            for (long h : survivors) {
                assertEquals(h, (long) heap.read(h, s -> s.get(ValueLayout.JAVA_LONG, 0)));
                heap.free(h);
            }
            heap.compact();
            assertEquals(0, heap.stats().pages(), "every page went back");
        }
    }
}
