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

    @Test
    void valuesStayWholeUnderEightThreadsWhileTheHeapCompacts() throws Exception {
        CompactingHeap.Builder heap = CompactingHeap.builder()
                .compactionInterval(Duration.ofMillis(1))
                .reclaimBatchBytes(64 * 1024);
        try (OffHeapCache<Long, MemorySegment> cache = OffHeapCache.builder(Serializers.longs(), Serializers.segments())
                .capacity(8 << 20).heap(heap).build()) {
            AtomicReference<String> failure = new AtomicReference<>();
            AtomicLong reads = new AtomicLong();
            long end = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    long version = 0;
                    while (System.nanoTime() < end && failure.get() == null) {
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
            assertTrue(reads.get() > 10_000, "reads: " + reads.get());
            assertTrue(s.movedBytes() > 0, "compaction must have moved values during the run: " + s);
            assertTrue(s.weightedBytes() <= s.capacityBytes(), s.toString());
            cache.clear();
            assertEquals(0, cache.stats().liveBytes());
        }
    }
}
