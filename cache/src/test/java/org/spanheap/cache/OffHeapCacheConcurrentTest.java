package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;

/**
 * Eight threads put, read in place, replace and remove values while the heap
 * compacts often; every value read must be whole: the key it was written for
 * and one fill byte throughout.
 */
class OffHeapCacheConcurrentTest {

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    /** Value of {@code key} at {@code version}: key, version, then a fill byte made of both. */
    private static MemorySegment value(long key, long version, int length) {
        MemorySegment s = MemorySegment.ofArray(new byte[length]);
        s.set(LONG, 0, key);
        s.set(LONG, 8, version);
        s.asSlice(16).fill(fill(key, version));
        return s;
    }

    private static byte fill(long key, long version) {
        return (byte) (key * 31 + version);
    }

    /** {@return null if whole, else what is wrong} */
    private static String check(long key, MemorySegment s) {
        if (s.get(LONG, 0) != key) {
            return "value of key " + s.get(LONG, 0) + " under key " + key;
        }
        byte f = fill(key, s.get(LONG, 8));
        for (long i = 16; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != f) {
                return "key " + key + ": byte " + i + " of " + s.byteSize() + " torn";
            }
        }
        return null;
    }

    private static final long MIN_READS = 10_000;

    @Test
    void valuesStayWholeUnderEightThreadsWhileTheHeapCompacts() throws Exception {
        CompactingHeap.Builder heap = CompactingHeap.builder()
                .compactionInterval(Duration.ofMillis(1))
                .reclaimBatchBytes(64 * 1024);
        try (OffHeapCache<Long, MemorySegment> cache = OffHeapCache.builder(Serializers.longs(), Serializers.segments())
                .capacity(8 << 20).heap(heap).build()) {
            AtomicReference<String> failure = new AtomicReference<>();
            AtomicLong reads = new AtomicLong();
            // at least 3 s and 10,000 reads (a slow or busy machine gets up to a minute), so the checks below can fail
            long start = System.nanoTime();
            long end = start + Duration.ofSeconds(3).toNanos();
            long limit = start + Duration.ofSeconds(60).toNanos();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    long version = 0;
                    for (long now = System.nanoTime(); failure.get() == null && now < limit
                            && (now < end || reads.get() < MIN_READS); now = System.nanoTime()) {
                        long key = rnd.nextInt(4_000);
                        int r = rnd.nextInt(100);
                        if (r < 30) {
                            int length = 16 + (rnd.nextInt(20) == 0 ? rnd.nextInt(40_000) : rnd.nextInt(2_000));
                            cache.put(key, value(key, version++, length));
                        } else if (r < 35) {
                            cache.remove(key);
                        } else {
                            String bad = cache.get(key, s -> check(key, s));
                            reads.incrementAndGet();
                            if (bad != null) {
                                failure.compareAndSet(null, bad);
                            }
                        }
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertEquals(null, failure.get());
            cache.cleanUp(); // evictions deferred while another thread held the policy's lock
            CacheStats s = cache.stats();
            assertTrue(reads.get() >= MIN_READS, "reads: " + reads.get());
            assertTrue(s.movedBytes() > 0, "compaction must have moved values during the run: " + s);
            assertTrue(s.weightedBytes() <= s.capacityBytes(), s.toString());
            cache.clear();
            assertEquals(0, cache.stats().liveBytes());
        }
    }

    @Test
    void replaceLoopsLoseNoIncrement() throws Exception {
        int threads = 4;
        int increments = 2_000;
        try (OffHeapCache<Long, Long> c = OffHeapCache.builder(Serializers.longs(), Serializers.longs())
                .capacity(16 << 20).build()) {
            for (long key = 0; key < 4; key++) {
                c.put(key, 0L);
            }
            runTogether(threads, () -> {
                for (int i = 0; i < increments; i++) {
                    long key = i & 3;
                    for (;;) {
                        Long seen = c.get(key);
                        if (c.replace(key, seen, seen + 1)) {
                            break;
                        }
                    }
                }
            });
            long sum = 0;
            for (long key = 0; key < 4; key++) {
                sum += c.get(key);
            }
            assertEquals((long) threads * increments, sum, "every increment landed once");
            assertEquals(4, c.size());
        }
    }

    @Test
    void concurrentComputeIfAbsentRunsOneLoadPerKey() throws Exception {
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(16 << 20).build()) {
            java.util.concurrent.atomic.AtomicInteger loads = new java.util.concurrent.atomic.AtomicInteger();
            runTogether(8, () -> {
                for (long key = 0; key < 200; key++) {
                    long k = key;
                    byte[] v = c.computeIfAbsent(k, x -> {
                        loads.incrementAndGet();
                        java.util.concurrent.locks.LockSupport.parkNanos(20_000); // others arrive meanwhile
                        return new byte[] {(byte) x.longValue()};
                    });
                    assertEquals(1, v.length);
                    assertEquals((byte) key, v[0]);
                }
            });
            assertEquals(200, loads.get(), "one load per key");
            assertEquals(200, c.stats().loads());
            assertEquals(200, c.size());
        }
    }

    @Test
    void hitsAndMissesAreTheLookupsThatFoundAValueAndThoseThatDidNot() throws Exception {
        // few keys, replaced all the time: lookups often meet a handle freed between the index and the read
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(16 << 20).build()) {
            for (long key = 0; key < 8; key++) {
                c.put(key, new byte[64]);
            }
            java.util.concurrent.atomic.LongAdder found = new java.util.concurrent.atomic.LongAdder();
            java.util.concurrent.atomic.LongAdder notFound = new java.util.concurrent.atomic.LongAdder();
            runTogether(8, () -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                for (int i = 0; i < 100_000; i++) {
                    long key = rnd.nextInt(8);
                    if (rnd.nextBoolean()) {
                        c.put(key, new byte[64]);
                    } else {
                        (c.get(key) != null ? found : notFound).increment();
                    }
                }
            });
            CacheStats s = c.stats();
            assertEquals(found.sum(), s.hits(), "hits: " + s);
            assertEquals(notFound.sum(), s.misses(), "misses: " + s);
        }
    }

    /** Runs {@code body} on {@code n} threads released together; rethrows the first failure. */
    private static void runTogether(int n, Runnable body) throws InterruptedException {
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(n);
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int t = 0; t < n; t++) {
            Thread th = new Thread(() -> {
                try {
                    start.await();
                    body.run();
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }

    @Test
    void aLoaderThatLoadsItsOwnKeyAgainGetsAClearException() {
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(1 << 20).build()) {
            IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> c.computeIfAbsent(1L, k -> c.computeIfAbsent(1L, k2 -> new byte[1])));
            assertTrue(e.getMessage().contains("loading"), e.getMessage());
            assertEquals(0, c.size());
            assertEquals(1, c.computeIfAbsent(1L, k -> new byte[1]).length, "the key can be loaded afterwards");
        }
    }
}
