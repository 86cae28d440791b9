package org.spanheap.examples.cache;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OffHeapCacheTest {

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Value of key k, version v: length and bytes derived from both. */
    private static byte[] value(int k, int v) {
        int len = 1 + Math.floorMod(k * 31 + v * 17, 3000);
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = (byte) (k + v * 7 + i * 13);
        }
        return b;
    }

    @ParameterizedTest
    @ValueSource(strings = {"compacting", "no-compaction", "compacting-mmap", "malloc"})
    void putGetReplaceRemove(String store) {
        try (OffHeapCache cache = new OffHeapCache(CacheChurn.newStore(store), 1 << 20, 4)) {
            assertNull(cache.get(bytes("a")));
            cache.put(bytes("a"), bytes("alpha"));
            cache.put(bytes("b"), new byte[0]);
            assertArrayEquals(bytes("alpha"), cache.get(bytes("a")));
            assertArrayEquals(new byte[0], cache.get(bytes("b")));
            cache.put(bytes("a"), bytes("a much longer value than before"));
            assertArrayEquals(bytes("a much longer value than before"), cache.get(bytes("a")));
            MemorySegment small = MemorySegment.ofArray(new byte[4]);
            assertEquals(31, cache.get(bytes("a"), small)); // too small: length only
            assertEquals(-1, cache.get(bytes("zz"), small));
            assertTrue(cache.remove(bytes("a")));
            assertFalse(cache.remove(bytes("a")));
            assertNull(cache.get(bytes("a")));
            assertEquals(1, cache.stats().entries());
            assertEquals(EntryStore.entryBytes(1, 0), cache.stats().bytes());
            assertThrows(IllegalArgumentException.class, () -> cache.put(bytes("x"), new byte[1 << 20]));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"compacting", "no-compaction", "compacting-mmap", "malloc"})
    void staysWithinItsBoundAndEvictsUnreadEntriesFirst(String store) {
        long bound = 256 * 1024;
        try (OffHeapCache cache = new OffHeapCache(CacheChurn.newStore(store), bound, 1)) {
            byte[] hot = bytes("hot");
            cache.put(hot, new byte[1000]);
            for (int k = 0; k < 2000; k++) {
                cache.get(hot); // sets its CLOCK bit again and again
                byte[] key = bytes("k" + k);
                cache.put(key, value(k, 0));
                assertTrue(cache.stats().bytes() <= bound, "over the bound");
            }
            assertTrue(cache.stats().evictions() > 0);
            assertEquals(1000, cache.get(hot).length, "a hot entry survives");
            // everything still cached is intact
            int present = 0;
            for (int k = 0; k < 2000; k++) {
                byte[] v = cache.get(bytes("k" + k));
                if (v != null) {
                    assertArrayEquals(value(k, 0), v);
                    present++;
                }
            }
            assertTrue(present > 50, "present: " + present);
        }
    }

    @Test
    void concurrentChurnKeepsEveryValueIntactWhileTheHeapCompacts() throws Exception {
        CompactingEntryStore store = CompactingEntryStore.create(1);
        int threads = 4;
        int keys = 3000;
        try (OffHeapCache cache = new OffHeapCache(store, 2 << 20, 8)) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> workers = new ArrayList<>();
            long end = System.nanoTime() + 3_000_000_000L;
            for (int t = 0; t < threads; t++) {
                int id = t;
                workers.add(new Thread(() -> {
                    SplittableRandom rnd = new SplittableRandom(id);
                    try {
                        while (System.nanoTime() < end && failure.get() == null) {
                            int k = rnd.nextInt(keys);
                            // each key's versions: 0..3; a get must return one of them, whole
                            byte[] key = bytes("key-" + k);
                            if (rnd.nextInt(4) == 0) {
                                cache.put(key, value(k, rnd.nextInt(4)));
                            } else if (rnd.nextInt(50) == 0) {
                                cache.remove(key);
                            } else {
                                byte[] v = cache.get(key);
                                if (v != null && !(Arrays.equals(v, value(k, 0)) || Arrays.equals(v, value(k, 1))
                                        || Arrays.equals(v, value(k, 2)) || Arrays.equals(v, value(k, 3)))) {
                                    throw new AssertionError("corrupt value of key " + k);
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            Thread compactor = new Thread(() -> {
                while (System.nanoTime() < end && failure.get() == null) {
                    try {
                        store.heap().compact();
                        Thread.sleep(5);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }
            });
            workers.forEach(Thread::start);
            compactor.start();
            for (Thread w : workers) {
                w.join();
            }
            compactor.join();
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            assertTrue(cache.stats().bytes() <= (2 << 20) + threads * 3100L);
            assertTrue(store.memory().movedBytes() > 0, "the heap moved entries");
            assertEquals(cache.stats().bytes(), store.heap().stats().liveBytes());
        }
    }

    @Test
    void closeFreesEveryEntryOfAMallocStore() {
        OffHeapCache cache = new OffHeapCache(new MallocEntryStore(), 1 << 20, 2);
        for (int k = 0; k < 100; k++) {
            cache.put(bytes("k" + k), value(k, 1));
        }
        cache.close();
        cache.close();
        assertThrows(IllegalStateException.class, () -> cache.get(bytes("k1")));
    }

    @Test
    void churnWorkloadRunsAndReports() throws Exception {
        CacheChurn.Options o = CacheChurn.Options.parse(new String[] {
                "-seconds", "1", "-max-mib", "8", "-keys", "20000", "-phase-seconds", "0.3", "-warmup-seconds", "0", "-compact-ms", "200", "-quiet"});
        var out = new java.io.ByteArrayOutputStream();
        var ps = new java.io.PrintStream(out, true, StandardCharsets.UTF_8);
        List<CacheChurn.Result> results = new CacheChurn(o, ps).runAll();
        CacheChurn.report(results, ps);
        assertEquals(4, results.size());
        for (CacheChurn.Result r : results) {
            assertEquals(0, r.errors());
            assertTrue(r.ops() > 0);
            assertTrue(r.liveBytes() <= 8 << 20);
        }
        String table = out.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("compacting k=2, default pages") && table.contains("compacting k=2, mmap pages")
                && table.contains("malloc per entry"), table);
    }
}
