package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.StaleHandleException;

/**
 * Worker threads read and write objects through handles while another thread
 * compacts without pause and relocates the very objects the workers use. Every object carries its own handle in word 0 and a
 * checksum in its last word, so a read of another object's memory, a torn
 * read or a lost write is detected:
 * <ul>
 * <li>owned objects: only the owner writes them (a new sequence number and
 *     payload each time) and checks that a later read sees exactly its last
 *     write (no lost write, no torn read);</li>
 * <li>published objects: owners replace them (allocate, fill, publish the
 *     handle, free the old one) while all workers read random published
 *     handles; a read either throws {@link StaleHandleException} or sees an
 *     intact object with its own handle (no access to freed memory).</li>
 * </ul>
 * Duration: system property {@code spanheap.test.seconds} (default 3).
 */
class CompactingHeapConcurrentTest {

    static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
    /** Worker threads of the current run. */
    int workers = 2;
    static final int OWNED = 64;
    /** Few published objects of one size, so a freed block is soon someone else's (if the heap let it). */
    static final int PUBLISHED = 32;
    static final int PUBLISHED_WORDS = 16;

    final AtomicReference<String> failure = new AtomicReference<>();
    final AtomicLong staleSeen = new AtomicLong();
    final AtomicLong checkedReads = new AtomicLong();
    /** Owned handles of the workers, which the compactor relocates at random. */
    AtomicLongArray hot;

    /** Compaction and relocation of the objects in use run all the time. */
    @Test
    void accessDuringCompaction() throws Exception {
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(1).movedBytesPerRound(512).pageSize(4096)
                .reclaimBatchBytes(8192).build()) {
            run(heap, true);
        }
    }

    /**
     * The default set-up (batched reclaim by the background thread, kappa 2)
     * with 16 workers on a small machine, a tenth of the objects large (mapped
     * one by one and unmapped when reclaimed), and another thread relocating
     * and compacting.
     */
    @Test
    void manyThreadsLargeObjectsDefaultHeap() throws Exception {
        workers = 16;
        largeEvery = 10;
        try (CompactingHeap heap = CompactingHeap.builder().pageSize(4096).reclaimBatchBytes(16 * 1024).build()) {
            run(heap, true);
            heap.compact(); // reclaims what waits in limbo: freed large objects' mappings count until then
            assertTrue(heap.stats().largeBytes() == 0 || heap.stats().largeObjects() > 0, () -> heap.stats().toString());
        }
    }

    /** One object in {@code largeEvery} is large (over a quarter page); 0: none. */
    int largeEvery;

    /**
     * No compaction: epochs change only when freed blocks are reclaimed, so a
     * read that overlaps the free of its object relies on the reclaim waiting
     * for the epoch (no reuse of a block that a running access may still see).
     */
    @Test
    void accessDuringFreeAndReuse() throws Exception {
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).pageSize(4096)
                .reclaimBatchBytes(0).build()) {
            run(heap, false);
        }
    }

    void run(CompactingHeap heap, boolean compact) throws Exception {
        long seconds = Long.getLong("spanheap.test.seconds", 2);
        hot = new AtomicLongArray(workers * OWNED);
        {
            AtomicLongArray published = new AtomicLongArray(PUBLISHED);
            SplittableRandom init = new SplittableRandom(42);
            for (int i = 0; i < PUBLISHED; i++) {
                published.set(i, newObject(heap, init, 0, PUBLISHED_WORDS));
            }
            long deadline = System.nanoTime() + seconds * 1_000_000_000L;
            Thread[] threads = new Thread[workers];
            for (int w = 0; w < workers; w++) {
                int id = w;
                threads[w] = new Thread(() -> work(heap, published, id, deadline), "worker-" + w);
            }
            Thread compactor = new Thread(() -> {
                try {
                    SplittableRandom rnd = new SplittableRandom(7);
                    int round = 0;
                    while (System.nanoTime() < deadline && failure.get() == null) {
                        if (++round % 64 == 0) {
                            heap.compact();
                        } else { // move objects that the workers are reading and writing right now
                            long h = hot.get(rnd.nextInt(hot.length()));
                            try {
                                heap.relocate(h);
                            } catch (StaleHandleException replacedMeanwhile) {
                                // fine
                            }
                            Thread.yield(); // leave the workers CPU time on small machines
                        }
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, "compactor: " + t);
                }
            }, "compactor");
            for (Thread t : threads) {
                t.start();
            }
            if (compact) {
                compactor.start();
            }
            for (Thread t : threads) {
                t.join();
            }
            if (compact) {
                compactor.join();
            }
            assertNull(failure.get());
            CompactingHeapStats st = heap.stats();
            assertTrue(!compact || st.movedBytes() > 0, "compaction moved objects during the run");
            assertTrue(checkedReads.get() > 100, "reads were checked: " + checkedReads.get());
            System.out.printf("concurrent run: %d checked reads, %d stale reads refused, moved %d KiB in %d increments,"
                    + " %d epochs, longest increment %d us%n", checkedReads.get(), staleSeen.get(),
                    st.movedBytes() >> 10, st.compactionIncrements(), st.epochs(), st.maxIncrementNanos() / 1000);
            for (int i = 0; i < PUBLISHED; i++) {
                heap.free(published.get(i));
            }
        }
    }

    /** Allocates an object of 3..64 words (or, one in {@link #largeEvery}, 200..2000): handle, seq, payload, checksum. */
    long newObject(CompactingHeap heap, SplittableRandom rnd, long seq) {
        if (largeEvery > 0 && rnd.nextInt(largeEvery) == 0) {
            return newObject(heap, rnd, seq, 200 + rnd.nextInt(1800));
        }
        return newObject(heap, rnd, seq, 3 + rnd.nextInt(62));
    }

    static long newObject(CompactingHeap heap, SplittableRandom rnd, long seq, int words) {
        long h = heap.allocate(words * 8L);
        long payloadSeed = rnd.nextLong();
        heap.write(h, s -> fill(s, h, seq, payloadSeed));
        return h;
    }

    static void fill(MemorySegment s, long h, long seq, long payloadSeed) {
        fill(s, h, seq, payloadSeed, false);
    }

    /** With {@code pause}, yields half way, so that a move can fall into the middle of the write. */
    static void fill(MemorySegment s, long h, long seq, long payloadSeed, boolean pause) {
        int words = (int) (s.byteSize() / 8);
        long sum = mix(h) ^ mix(seq + 1);
        s.set(L, 0, h);
        s.set(L, 8, seq);
        long x = payloadSeed;
        for (int i = 2; i < words - 1; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            s.set(L, i * 8L, x);
            sum = sum * 31 + mix(x);
            if (pause && i == words / 2) {
                Thread.yield();
            }
        }
        s.set(L, (words - 1) * 8L, sum);
    }

    /** Returns the sequence number, or throws AssertionError if the object is not intact or not {@code h}. */
    static long verify(MemorySegment s, long h) {
        return verify(s, h, false);
    }

    /** With {@code pause}, yields half way, so that a move can fall into the middle of the read. */
    static long verify(MemorySegment s, long h, boolean pause) {
        int words = (int) (s.byteSize() / 8);
        long owner = s.get(L, 0);
        long seq = s.get(L, 8);
        long sum = mix(owner) ^ mix(seq + 1);
        for (int i = 2; i < words - 1; i++) {
            sum = sum * 31 + mix(s.get(L, i * 8L));
            if (pause && i == words / 2) {
                Thread.yield();
            }
        }
        if (owner != h) {
            throw new AssertionError("read of " + Long.toHexString(h) + " reached object " + Long.toHexString(owner));
        }
        if (sum != s.get(L, (words - 1) * 8L)) {
            throw new AssertionError("torn or corrupt object " + Long.toHexString(h) + " seq " + seq);
        }
        return seq;
    }

    static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        return z ^ (z >>> 29);
    }

    void work(CompactingHeap heap, AtomicLongArray published, int id, long deadline) {
        try {
            SplittableRandom rnd = new SplittableRandom(id * 7919L + 1);
            long[] owned = new long[OWNED];
            long[] seq = new long[OWNED];
            for (int i = 0; i < OWNED; i++) {
                owned[i] = newObject(heap, rnd, 0);
                hot.set(id * OWNED + i, owned[i]);
            }
            while (System.nanoTime() < deadline && failure.get() == null) {
                int op = rnd.nextInt(100);
                if (op < 30) { // write an owned object, then read it back
                    int i = rnd.nextInt(OWNED);
                    long h = owned[i];
                    long next = ++seq[i];
                    long payloadSeed = rnd.nextLong();
                    boolean pause = rnd.nextInt(16) == 0;
                    heap.write(h, s -> fill(s, h, next, payloadSeed, pause));
                    long got = heap.read(h, s -> verify(s, h, pause));
                    if (got != next) {
                        throw new AssertionError("lost write: object " + Long.toHexString(h) + " seq " + got
                                + " expected " + next);
                    }
                    checkedReads.incrementAndGet();
                } else if (op < 40) { // re-read an owned object
                    int i = rnd.nextInt(OWNED);
                    long h = owned[i];
                    boolean pause = rnd.nextInt(16) == 0;
                    long got = heap.read(h, s -> verify(s, h, pause));
                    if (got != seq[i]) {
                        throw new AssertionError("lost write: object " + Long.toHexString(h) + " seq " + got
                                + " expected " + seq[i]);
                    }
                    checkedReads.incrementAndGet();
                } else if (op < 45) { // replace an owned object: churn that leaves holes to compact
                    int i = rnd.nextInt(OWNED);
                    long old = owned[i];
                    heap.free(old);
                    try {
                        heap.read(old, s -> verify(s, old));
                        throw new AssertionError("read of freed handle " + Long.toHexString(old) + " succeeded");
                    } catch (StaleHandleException expected) {
                        staleSeen.incrementAndGet();
                    }
                    owned[i] = newObject(heap, rnd, 0);
                    hot.set(id * OWNED + i, owned[i]);
                    seq[i] = 0;
                } else if (op < 50) { // replace a published object of ours
                    int i = (rnd.nextInt(PUBLISHED / workers + 1) * workers + id) % PUBLISHED;
                    long fresh = newObject(heap, rnd, 0, PUBLISHED_WORDS);
                    long old = published.getAndSet(i, fresh);
                    heap.free(old);
                } else { // read any published object: intact and its own, or refused as stale
                    long h = published.get(rnd.nextInt(PUBLISHED));
                    boolean pause = rnd.nextInt(4) == 0;
                    try {
                        heap.read(h, s -> verify(s, h, pause));
                        checkedReads.incrementAndGet();
                    } catch (StaleHandleException replacedMeanwhile) {
                        staleSeen.incrementAndGet();
                    }
                }
            }
            for (long h : owned) {
                heap.read(h, s -> verify(s, h));
                heap.free(h);
            }
        } catch (Throwable t) {
            failure.compareAndSet(null, Thread.currentThread().getName() + ": " + t);
        }
    }
}
