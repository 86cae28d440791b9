package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * The opt-in thread-owned pages ({@code threadOwnedPages(true)}): contents, accounting and stale
 * handles through the owner's frees, other threads' frees onto a page's thread-free list, and
 * pages left behind by a thread that ended.
 */
class CompactingHeapThreadOwnedPagesTest {

    private static CompactingHeap ownedPagesHeap() {
        return CompactingHeap.builder().threadOwnedPages(true).reclaimBatchBytes(4096).build();
    }

    private static long object(CompactingHeap heap, long id) {
        long h = heap.allocate(64);
        heap.setLong(h, 0, id);
        heap.setLong(h, 56, ~id);
        return h;
    }

    private static void check(CompactingHeap heap, long h, long id) {
        assertEquals(id, heap.getLong(h, 0));
        assertEquals(~id, heap.getLong(h, 56));
    }

    @Test
    void theOwnersReplacesKeepContentsAndAFreedHandleIsStale() {
        try (CompactingHeap heap = ownedPagesHeap()) {
            SplittableRandom random = new SplittableRandom(7);
            long[] handles = new long[4096];
            long[] ids = new long[handles.length];
            for (int i = 0; i < handles.length; i++) {
                ids[i] = i;
                handles[i] = object(heap, i);
            }
            for (int round = 0; round < 50_000; round++) { // replace: allocate anew, free the old
                int i = random.nextInt(handles.length);
                long old = handles[i];
                ids[i] = handles.length + round;
                handles[i] = object(heap, ids[i]);
                heap.free(old);
                assertThrows(StaleHandleException.class, () -> heap.getLong(old, 0));
            }
            heap.compact();
            for (int i = 0; i < handles.length; i++) {
                check(heap, handles[i], ids[i]);
            }
            assertEquals(handles.length, heap.stats().liveObjects());
            for (long h : handles) {
                heap.free(h);
            }
            heap.compact();
            assertEquals(0, heap.stats().liveObjects());
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    @Test
    void anotherThreadsFreesReachTheOwnersPagesAndNothingIsLost() throws Exception {
        try (CompactingHeap heap = ownedPagesHeap()) {
            ConcurrentLinkedQueue<long[]> handedOver = new ConcurrentLinkedQueue<>();
            int count = 100_000;
            Thread freer = Thread.ofPlatform().start(() -> {
                int freed = 0;
                while (freed < count) {
                    long[] pair = handedOver.poll();
                    if (pair == null) {
                        Thread.onSpinWait();
                        continue;
                    }
                    check(heap, pair[0], pair[1]);
                    heap.free(pair[0]); // a remote free: the page is the allocating thread's
                    freed++;
                }
            });
            List<long[]> kept = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                handedOver.add(new long[] {object(heap, i), i});
                if (i % 1000 == 0) {
                    kept.add(new long[] {object(heap, -i - 1), -i - 1});
                }
            }
            freer.join();
            heap.compact();
            for (long[] k : kept) {
                check(heap, k[0], k[1]);
            }
            assertEquals(kept.size(), heap.stats().liveObjects());
        }
    }

    @Test
    void pagesOfAThreadThatEndedAreGivenUpAndItsObjectsStayReadable() throws Exception {
        try (CompactingHeap heap = ownedPagesHeap()) {
            long[] handles = new long[10_000];
            Thread owner = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < handles.length; i++) {
                    handles[i] = object(heap, i);
                }
                for (int i = 0; i < handles.length; i += 2) {
                    heap.free(handles[i]);
                }
            });
            owner.join();
            heap.compact(); // gives up the ended thread's pages, reclaims and compacts
            for (int i = 1; i < handles.length; i += 2) {
                check(heap, handles[i], i);
            }
            assertEquals(handles.length / 2, heap.stats().liveObjects());
            for (int i = 1; i < handles.length; i += 2) { // freed by a thread that never owned them
                heap.free(handles[i]);
            }
            heap.compact();
            assertEquals(0, heap.stats().liveObjects());
        }
    }

    @Test
    void aLongReplaceLoopReusesTheOwnersPagesAndKeepsTheHeapSmall() {
        try (CompactingHeap heap = ownedPagesHeap()) {
            SplittableRandom random = new SplittableRandom(11);
            long[] handles = new long[2000]; // 64-byte objects: about two 64 KiB pages live
            for (int i = 0; i < handles.length; i++) {
                handles[i] = object(heap, i);
            }
            for (int round = 0; round < 400_000; round++) {
                int i = random.nextInt(handles.length);
                long old = handles[i];
                handles[i] = object(heap, i);
                heap.free(old);
            }
            for (int i = 0; i < handles.length; i++) {
                check(heap, handles[i], i);
            }
            heap.compact();
            // the owner's current and waiting pages went back to the lanes before the count:
            // what the heap holds is the live objects' pages and the reserve, not a page per fill
            assertEquals(handles.length, heap.stats().liveObjects());
            long pages = heap.stats().pages();
            assertTrue(pages <= 12, "pages after 400,000 replaces: " + pages);
        }
    }

    @Test
    void twoLiveThreadsWhoseIdsShareARecordSlotKeepTheirOwnPages() throws Exception {
        try (CompactingHeap heap = ownedPagesHeap()) {
            CyclicBarrier start = new CyclicBarrier(2);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Runnable work = () -> {
                try {
                    start.await();
                    long id0 = Thread.currentThread().threadId() << 32;
                    long[] handles = new long[1000];
                    for (int i = 0; i < handles.length; i++) {
                        handles[i] = object(heap, id0 + i);
                    }
                    SplittableRandom random = new SplittableRandom(id0);
                    for (int round = 0; round < 100_000; round++) {
                        int i = random.nextInt(handles.length);
                        check(heap, handles[i], id0 + i);
                        long old = handles[i];
                        handles[i] = object(heap, id0 + i);
                        heap.free(old);
                    }
                    for (long h : handles) {
                        heap.free(h);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            };
            Thread first = Thread.ofPlatform().unstarted(work);
            Thread second;
            do { // thread ids are handed out in order: one of the next 256 shares the first's slot
                second = Thread.ofPlatform().unstarted(work);
            } while (((second.threadId() ^ first.threadId()) & 255) != 0);
            first.start();
            second.start();
            first.join();
            second.join();
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            heap.compact();
            assertEquals(0, heap.stats().liveObjects());
        }
    }
}
