package org.spanheap;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link SpanHeap} under many platform and virtual threads, with content checks. */
class ConcurrentSpanHeapTest {

    /** Writes {@code tag} into every long of {@code s}. */
    static void stamp(MemorySegment s, long tag) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            s.set(JAVA_LONG, i, tag ^ i);
        }
    }

    static void verify(MemorySegment s, long tag) {
        for (long i = 0; i + 8 <= s.byteSize(); i += 8) {
            long v = s.get(JAVA_LONG, i);
            if (v != (tag ^ i)) {
                throw new AssertionError("block 0x" + Long.toHexString(s.address()) + " word " + i
                        + " is " + Long.toHexString(v) + ", expected " + Long.toHexString(tag ^ i));
            }
        }
    }

    /** Runs {@code body} on {@code n} threads of {@code builder}; rethrows the first failure. */
    static void runThreads(Thread.Builder builder, int n, IntBody body) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int id = i;
            threads.add(builder.start(() -> {
                try {
                    body.run(id);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread failed", failure.get());
        }
    }

    interface IntBody {
        void run(int id) throws Exception;
    }

    @Test
    void platformThreadsAllocateAndFreeWithContentChecks() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            runThreads(Thread.ofPlatform(), 8, id -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                MemorySegment[] live = new MemorySegment[256];
                long[] tags = new long[live.length];
                for (int op = 0; op < 100_000; op++) {
                    int k = rnd.nextInt(live.length);
                    if (live[k] != null) {
                        verify(live[k], tags[k]);
                        heap.free(live[k]);
                        live[k] = null;
                    } else {
                        long size = rnd.nextInt(10) == 0 ? rnd.nextInt(40_000) : rnd.nextInt(512);
                        live[k] = heap.allocateUninitialized(size);
                        tags[k] = rnd.nextLong();
                        stamp(live[k], tags[k]);
                    }
                }
                for (int k = 0; k < live.length; k++) {
                    if (live[k] != null) {
                        verify(live[k], tags[k]);
                        heap.free(live[k]);
                    }
                }
            });
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    @Test
    void blocksFreedByOtherThreads() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            BlockingQueue<MemorySegment> queue = new ArrayBlockingQueue<>(1024);
            int perProducer = 50_000;
            int producers = 2;
            MemorySegment poison = MemorySegment.NULL;
            Thread consumer = Thread.ofPlatform().start(() -> {
                int done = 0;
                try {
                    while (done < producers) {
                        MemorySegment s = queue.take();
                        if (s == poison) {
                            done++;
                            continue;
                        }
                        verify(s, s.address());
                        heap.free(s);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            runThreads(Thread.ofPlatform(), producers, id -> {
                for (int i = 0; i < perProducer; i++) {
                    MemorySegment s = heap.allocateUninitialized(16 + (i % 8) * 16);
                    stamp(s, s.address());
                    queue.put(s);
                }
                queue.put(poison);
            });
            consumer.join();
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    @Test
    void hundredThousandVirtualThreads() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            AtomicLong failures = new AtomicLong();
            AtomicReference<Throwable> firstFailure = new AtomicReference<>();
            try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 100_000; i++) {
                    long tag = i;
                    ex.submit(() -> {
                        try {
                            MemorySegment a = heap.allocate(64);
                            MemorySegment b = heap.allocateUninitialized(24 + tag % 200);
                            stamp(a, tag);
                            stamp(b, ~tag);
                            Thread.yield();          // let others run on this carrier
                            verify(a, tag);
                            verify(b, ~tag);
                            heap.free(a);
                            heap.free(b);
                        } catch (Throwable t) {
                            failures.incrementAndGet();
                            firstFailure.compareAndSet(null, t);
                        }
                    });
                }
            }
            assertEquals(0, failures.get(), () -> "first failure: " + firstFailure.get());
            HeapStats stats = heap.stats();
            assertEquals(0, stats.liveBytes());
            // Virtual threads share a few stripes (4 per core), never one cache each.
            long stripeBound = 4L * Integer.highestOneBit(4 * Runtime.getRuntime().availableProcessors())
                    * 2 * SpanHeap.DEFAULT_CACHE_BYTES_PER_CLASS * stats.sizeClasses().size();
            assertTrue(stats.cachedBytes() <= stripeBound, stats.toString());
            heap.flushThreadCache();
            assertEquals(0, heap.stats().cachedBytes());
        }
    }

    /**
     * Virtual threads that make thousands of operations in a row are promoted to a private
     * cache (bounded: at most as many as there are stripes), then use the platform fast path;
     * more of them than the bound keep using the stripes. Contents, double-free detection and
     * stats hold throughout, and the caches of the terminated virtual threads are drained.
     */
    @Test
    @Tag("native-engine") // the native engine's thread caches
    void longLivedVirtualThreadsArePromotedWithinABound() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            int threads = 4 * Integer.highestOneBit(4 * Runtime.getRuntime().availableProcessors());
            CountDownLatch allRan = new CountDownLatch(threads);
            CountDownLatch statsChecked = new CountDownLatch(threads);
            long block = heap.stats().sizeClasses().stream()
                    .filter(c -> c.blockSize() >= 64).findFirst().orElseThrow().blockSize();
            runThreads(Thread.ofVirtual(), threads, id -> {
                MemorySegment[] live = new MemorySegment[16];
                for (int round = 0; round < 3 * 1024; round++) {
                    for (int k = 0; k < live.length; k++) {
                        if (live[k] != null) {
                            verify(live[k], id * 100_000L + k);
                            heap.free(live[k]);
                        }
                        live[k] = heap.allocate(64);
                        stamp(live[k], id * 100_000L + k);
                    }
                    // No double free here: until they are promoted, virtual threads share stripes, so
                    // another thread may take a freed block at once, and a second free would free
                    // that thread's block (virtualThreadsDetectDoubleFreeAndFreeOthersBlocks checks
                    // the double free of a virtual thread alone)
                    heap.free(heap.allocateUninitialized(48));
                }
                allRan.countDown();
                // everybody is quiescent: stats are exact. Bounded, so that a thread that failed
                // before its count-down fails the test (runThreads reports the first failure)
                // instead of leaving the others waiting for ever
                assertTrue(allRan.await(60, TimeUnit.SECONDS), "a thread never reached the stats check");
                HeapStats st = heap.stats();
                assertEquals((long) threads * live.length * block, st.liveBytes(), st.toString());
                statsChecked.countDown();
                assertTrue(statsChecked.await(60, TimeUnit.SECONDS), "a thread never passed the stats check");
                for (int k = 0; k < live.length; k++) {
                    verify(live[k], id * 100_000L + k);
                    heap.free(live[k]);
                }
            });
            HeapStats stats = heap.stats();     // drains the terminated threads' caches
            assertEquals(0, stats.liveBytes(), stats.toString());
            heap.flushThreadCache();
            assertEquals(0, heap.stats().cachedBytes());
        }
    }

    @Test
    void virtualThreadsDetectDoubleFreeAndFreeOthersBlocks() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            List<MemorySegment> fromPlatform = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                MemorySegment s = heap.allocateUninitialized(64);
                stamp(s, i);
                fromPlatform.add(s);
            }
            runThreads(Thread.ofVirtual(), 1, id -> {
                for (int i = 0; i < fromPlatform.size(); i++) {
                    verify(fromPlatform.get(i), i);
                    heap.free(fromPlatform.get(i));
                }
                MemorySegment s = heap.allocate(64);
                heap.free(s);
                IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(
                        IllegalStateException.class, () -> heap.free(s));
                assertTrue(e.getMessage().startsWith("double free"), e.getMessage());
                MemorySegment big = heap.allocate(1 << 20);
                org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                        () -> heap.free(big.asSlice(64)));
                heap.free(big);
            });
            assertEquals(0, heap.stats().liveBytes());
            heap.flushThreadCache();
            assertEquals(0, heap.stats().cachedBytes());
        }
    }

    @Test
    void deadThreadsCachedBlocksAreDrained() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            // Each thread frees its blocks into its own cache, then dies holding them.
            runThreads(Thread.ofPlatform(), 16, id -> {
                List<MemorySegment> mine = new ArrayList<>();
                for (int i = 0; i < 300; i++) {
                    mine.add(heap.allocate(16 + (i % 4) * 48));
                }
                mine.forEach(heap::free);
            });
            HeapStats stats = heap.stats();      // drains the caches of the dead threads
            assertEquals(0, stats.liveBytes());
            assertEquals(0, stats.cachedBytes());
            for (HeapStats.SizeClass c : stats.sizeClasses()) {
                assertEquals(0, c.liveBlocks(), "class " + c);
                assertEquals(0, c.cachedBlocks(), "class " + c);
            }
        }
    }

    @Test
    void deadThreadsBlocksReturnUnderByteLimit() throws Exception {
        try (SpanHeap heap = SpanHeap.builder().byteLimit(32L << 20).build()) {
            for (int round = 0; round < 20; round++) {
                runThreads(Thread.ofPlatform(), 4, id -> {
                    List<MemorySegment> mine = new ArrayList<>();
                    for (int i = 0; i < 2000; i++) {
                        mine.add(heap.allocateUninitialized(512));
                    }
                    mine.forEach(heap::free);
                });
            }
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    @Test
    void closeRacingWithUsersNeverCrashes() throws Exception {
        for (int round = 0; round < 20; round++) {
            SpanHeap heap = SpanHeap.create();
            AtomicBoolean unexpected = new AtomicBoolean();
            AtomicReference<Throwable> what = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(4);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                boolean virtual = t % 2 == 1;
                Runnable body = () -> {
                    started.countDown();
                    List<MemorySegment> live = new ArrayList<>();
                    try (Arena arena = heap.newArena()) {
                        for (int i = 0; ; i++) {
                            MemorySegment s = heap.allocateUninitialized(i % 7 == 0 ? 100_000 : 64);
                            s.set(JAVA_LONG, 0, i);
                            live.add(s);
                            arena.allocate(32).set(JAVA_LONG, 0, i);
                            if (live.size() > 50) {
                                for (MemorySegment m : live) {
                                    heap.free(m);
                                }
                                live.clear();
                            }
                        }
                    } catch (IllegalStateException expected) {
                        // the heap was closed under us
                    } catch (Throwable other) {
                        unexpected.set(true);
                        what.set(other);
                    }
                };
                threads.add(virtual ? Thread.ofVirtual().start(body) : Thread.ofPlatform().start(body));
            }
            started.await();
            Thread.sleep(round % 5);
            heap.close();
            for (Thread t : threads) {
                t.join();
            }
            if (unexpected.get()) {
                throw new AssertionError("unexpected failure", what.get());
            }
            assertTrue(!heap.isOpen());
        }
    }

    @Test
    void statsWhileOthersRunStaysSane() throws Exception {
        try (SpanHeap heap = SpanHeap.create()) {
            AtomicBoolean stop = new AtomicBoolean();
            ExecutorService ex = Executors.newFixedThreadPool(2);
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                fs.add(ex.submit(() -> {
                    while (!stop.get()) {
                        MemorySegment s = heap.allocate(128);
                        heap.free(s);
                    }
                }));
            }
            for (int i = 0; i < 200; i++) {
                HeapStats s = heap.stats();
                // an estimate while threads run: a refill may land between the two reads
                long bound = 2 * (128 + SpanHeap.DEFAULT_CACHE_BLOCKS * 128);
                assertTrue(s.liveBytes() >= 0 && s.liveBytes() <= bound, s.toString());
            }
            stop.set(true);
            for (Future<?> f : fs) {
                f.get();
            }
            ex.shutdown();
        }
    }
}
