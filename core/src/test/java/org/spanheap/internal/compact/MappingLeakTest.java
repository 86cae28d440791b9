package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/**
 * Every mapping the heap makes (pages mapped one by one, large segments) is
 * unmapped again: while it runs, the OS holds what the heap counts as
 * committed, and nothing after close. A churn with several threads, a size-mix
 * shift, large objects and compaction, on pages mapped one by one.
 */
class MappingLeakTest {

    @Test
    void committedIsWhatIsMappedAndCloseUnmapsAll() throws Exception {
        long before = OsMemory.MAPPED.get();
        CompactFitHeap heap = CompactFitHeap.overMappedPages(16 * 1024, 1, 2, 64 * 1024, 32 * 1024, 0, true, false);
        AtomicLongArray index = new AtomicLongArray(2048);
        MemorySegment source = MemorySegment.ofArray(new byte[256 * 1024]);
        for (int i = 0; i < index.length(); i++) {
            index.set(i, heap.allocate(100, source.asSlice(0, 100), null));
        }
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            int id = t;
            threads[t] = new Thread(() -> {
                SplittableRandom rnd = new SplittableRandom(id);
                for (int op = 0; op < 40_000; op++) {
                    boolean small = (op / 10_000) % 2 == 0; // size mix shifts
                    int size = rnd.nextInt(200) == 0 ? 8 * 1024 + rnd.nextInt(200 * 1024)
                            : small ? 16 + rnd.nextInt(200) : 500 + rnd.nextInt(3000);
                    long fresh = heap.allocate(size, source.asSlice(0, size), null);
                    long old = index.getAndSet(rnd.nextInt(index.length()), fresh);
                    heap.free(old);
                    if (op % 5000 == 0 && id == 0) {
                        heap.compact();
                    }
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        heap.compact(); // no round in progress, empty limbo: what is mapped is what is committed,
        // plus the large segments' granules that were never touched or were given back
        assertEquals(heap.stats().committedBytes() + heap.segmentBytesNotCommitted(), OsMemory.MAPPED.get() - before,
                "bytes mapped by the heap and not unmapped");
        for (int i = 0; i < index.length(); i++) {
            long h = index.get(i);
            heap.resolve(h).get(ValueLayout.JAVA_BYTE, 0);
        }
        heap.close();
        assertEquals(before, OsMemory.MAPPED.get(), "close unmapped everything");
    }
}
