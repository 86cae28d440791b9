package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

class OffHeapCacheTest {

    private static OffHeapCache<String, byte[]> bytesCache(long capacity) {
        return OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).capacity(capacity).build();
    }

    @Test
    void theDefaultHeapIsANewBuilderAtTheCachesPace() {
        OffHeapCache.defaultHeap().movedBytesPerRound(4096); // changing one builder leaves the next alone
        try (org.spanheap.CompactingHeap heap = OffHeapCache.defaultHeap().build()) {
            assertEquals(1 << 20, heap.movedBytesPerRound());
        }
    }

    @Test
    void chargesAreRoundedAsTheIndexKeepsThemAndTheLargestValueFits() {
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(1L << 40).build()) {
            long big = c.charge(8, 100_000);
            assertTrue(big >= 100_000 + 8 + OffHeapCache.ENTRY_OVERHEAD && big <= (100_000 + 4096 + 8 + OffHeapCache.ENTRY_OVERHEAD) * 257 / 256,
                    "rounded up by at most 1/256: " + big);
            assertEquals(big, EntryCharge.round(big), "a charge is what a code holds");
            assertTrue(c.charge(52 + 1_000, OffHeapCache.MAX_VALUE_SIZE) <= Integer.MAX_VALUE,
                    "the largest value's charge fits an int");
        }
    }

    @Test
    void storesReadsAndRemovesWithEveryBuiltInSerializer() {
        try (OffHeapCache<String, byte[]> c = bytesCache(1 << 20)) {
            c.put("a", new byte[] {1, 2, 3});
            c.put("empty", new byte[0]);
            c.put("naïve ☃", new byte[] {9});
            assertArrayEquals(new byte[] {1, 2, 3}, c.get("a"));
            assertArrayEquals(new byte[0], c.get("empty"));
            assertArrayEquals(new byte[] {9}, c.get("naïve ☃"));
            assertNull(c.get("b"));
            assertTrue(c.remove("a"));
            assertFalse(c.remove("a"));
            assertNull(c.get("a"));
            assertEquals(2, c.size());
        }
        try (OffHeapCache<Long, String> c = OffHeapCache.builder(Serializers.longs(), Serializers.utf8())
                .capacity(1 << 20).build()) {
            c.put(7L, "seven");
            c.put(-1L, "ünïcödé and \uD83D\uDE00");
            assertEquals("seven", c.get(7L));
            assertEquals("ünïcödé and \uD83D\uDE00", c.get(-1L));
        }
        try (OffHeapCache<MemorySegment, MemorySegment> c = OffHeapCache.builder(Serializers.segments(),
                Serializers.segments()).capacity(1 << 20).build(); Arena arena = Arena.ofConfined()) {
            MemorySegment key = arena.allocateFrom("key");
            MemorySegment value = arena.allocate(100);
            value.fill((byte) 5);
            c.put(key, value);
            // another segment with the same bytes is the same key
            MemorySegment sameKey = MemorySegment.ofArray("key\0".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            assertEquals(-1, c.get(sameKey).mismatch(value));
        }
    }

    @Test
    void byteArrayKeysAreComparedByContentAndCopied() {
        try (OffHeapCache<byte[], String> c = OffHeapCache.builder(Serializers.bytes(), Serializers.utf8())
                .capacity(1 << 20).build()) {
            byte[] key = {1, 2};
            c.put(key, "x");
            assertEquals("x", c.get(new byte[] {1, 2}));
            key[0] = 9; // the cache kept its own copy
            assertEquals("x", c.get(new byte[] {1, 2}));
            assertNull(c.get(key));
        }
    }

    @Test
    void customSerializerKeysAreEqualByTheirBytes() {
        record Point(int x, int y) {}
        Serializer<Point> points = new Serializer<>() {
            @Override
            public long size(Point p) {
                return 8;
            }

            @Override
            public void write(Point p, MemorySegment target) {
                target.set(ValueLayout.JAVA_INT_UNALIGNED, 0, p.x());
                target.set(ValueLayout.JAVA_INT_UNALIGNED, 4, p.y());
            }

            @Override
            public Point read(MemorySegment source) {
                return new Point(source.get(ValueLayout.JAVA_INT_UNALIGNED, 0),
                        source.get(ValueLayout.JAVA_INT_UNALIGNED, 4));
            }
        };
        List<Point> removed = new ArrayList<>();
        try (OffHeapCache<Point, Point> c = OffHeapCache.builder(points, points).capacity(1 << 20)
                .removalListener((k, v, cause) -> removed.add(k)).build()) {
            c.put(new Point(1, 2), new Point(3, 4));
            assertEquals(new Point(3, 4), c.get(new Point(1, 2)));
            c.remove(new Point(1, 2));
            assertEquals(List.of(new Point(1, 2)), removed);
        }
    }

    @Test
    void zeroCopyReadSeesTheValueInPlace() {
        try (OffHeapCache<String, byte[]> c = bytesCache(1 << 20)) {
            c.put("k", new byte[] {10, 20, 30});
            Long sum = c.get("k", s -> {
                long t = 0;
                for (long i = 0; i < s.byteSize(); i++) {
                    t += s.get(ValueLayout.JAVA_BYTE, i);
                }
                return t;
            });
            assertEquals(60L, sum);
            assertNull(c.get("missing", s -> {
                throw new AssertionError("no value, no call");
            }));
        }
    }

    @Test
    void putIfAbsentKeepsTheFirstValue() {
        try (OffHeapCache<String, byte[]> c = bytesCache(1 << 20)) {
            assertTrue(c.putIfAbsent("k", new byte[] {1}));
            long live = c.stats().liveBytes();
            assertFalse(c.putIfAbsent("k", new byte[] {2, 2}));
            assertArrayEquals(new byte[] {1}, c.get("k"));
            assertEquals(live, c.stats().liveBytes());
        }
    }

    @Test
    void replaceStoresOnlyOverTheExpectedValue() {
        AtomicLong now = new AtomicLong();
        List<String> removed = new ArrayList<>();
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).variableExpiry().ticker(now::get)
                .removalListener((k, v, cause) -> removed.add(k + "=" + v + ":" + cause)).build()) {
            c.put("k", "one");
            CacheStats before = c.stats();
            assertFalse(c.replace("k", "two", "three"), "another value is stored");
            assertFalse(c.replace("k", "on", "three"), "a prefix is not the value");
            assertFalse(c.replace("absent", "one", "three"));
            assertEquals("one", c.get("k"));
            assertFalse(c.containsKey("absent"));
            assertEquals(List.of(), removed);
            assertEquals(before.liveBytes(), c.stats().liveBytes(), "the unused new values were freed");
            assertEquals(before.weightedBytes(), c.stats().weightedBytes());

            assertTrue(c.replace("k", "one", "a longer value"));
            assertEquals("a longer value", c.get("k"));
            assertEquals(List.of("k=one:REPLACED"), removed);
            assertEquals(1, c.size());

            c.put("t", "x", Duration.ofSeconds(1));
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            assertFalse(c.replace("t", "x", "y"), "an expired value is no value");
            assertNull(c.get("t"));

            assertThrows(NullPointerException.class, () -> c.replace(null, "a", "b"));
            assertThrows(NullPointerException.class, () -> c.replace("k", null, "b"));
            assertThrows(NullPointerException.class, () -> c.replace("k", "a", null));
        }
    }

    @Test
    void replaceWithAThrowingSerializerLeavesTheCacheUnchanged() {
        Serializer<String> failsOnBoom = new Serializer<>() {
            @Override
            public long size(String value) {
                return Serializers.utf8().size(value);
            }

            @Override
            public void write(String value, java.lang.foreign.MemorySegment target) {
                if (value.equals("boom")) {
                    throw new IllegalStateException("cannot write boom");
                }
                Serializers.utf8().write(value, target);
            }

            @Override
            public String read(java.lang.foreign.MemorySegment source) {
                return Serializers.utf8().read(source);
            }
        };
        OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), failsOnBoom).capacity(1 << 20).build();
        try (c) {
            c.put("k", "v");
            long live = c.stats().liveBytes();
            assertThrows(IllegalStateException.class, () -> c.replace("k", "v", "boom"));
            assertThrows(IllegalStateException.class, () -> c.replace("k", "boom", "w"));
            assertEquals("v", c.get("k"));
            assertEquals(live, c.stats().liveBytes());
        }
        assertThrows(IllegalStateException.class, () -> c.replace("k", "v", "w"), "closed");
    }

    @Test
    void computeIfAbsentLoadsOnceAndAFailingLoaderLeavesNothing() {
        try (OffHeapCache<String, byte[]> c = bytesCache(1 << 20)) {
            AtomicInteger calls = new AtomicInteger();
            byte[] v = c.computeIfAbsent("k", k -> {
                calls.incrementAndGet();
                return k.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            });
            assertArrayEquals("k".getBytes(java.nio.charset.StandardCharsets.UTF_8), v);
            assertArrayEquals(v, c.computeIfAbsent("k", k -> {
                throw new AssertionError("present: the loader must not run");
            }));
            assertEquals(1, calls.get());

            CacheStats before = c.stats();
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> c.computeIfAbsent("bad", k -> {
                        throw new IllegalStateException("backend down");
                    }));
            assertEquals("backend down", thrown.getMessage());
            assertNull(c.computeIfAbsent("none", k -> null));
            CacheStats after = c.stats();
            assertFalse(c.containsKey("bad"));
            assertFalse(c.containsKey("none"));
            assertEquals(before.entries(), after.entries());
            assertEquals(before.liveBytes(), after.liveBytes());
            assertEquals(1, after.loads());
            assertEquals(2, after.loadFailures());
        }
    }

    @Test
    void badInputThrowsClearlyAndLeavesTheCacheUnchanged() {
        Serializer<byte[]> throwing = new Serializer<>() {
            @Override
            public long size(byte[] v) {
                return v.length;
            }

            @Override
            public void write(byte[] v, MemorySegment target) {
                if (v.length == 13) {
                    throw new UnsupportedOperationException("13 is unlucky");
                }
                MemorySegment.copy(v, 0, target, ValueLayout.JAVA_BYTE, 0, v.length);
            }

            @Override
            public byte[] read(MemorySegment source) {
                return source.toArray(ValueLayout.JAVA_BYTE);
            }
        };
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), throwing)
                .capacity(64 * 1024).build()) {
            c.put("k", new byte[] {1});
            CacheStats before = c.stats();

            assertThrows(NullPointerException.class, () -> c.put(null, new byte[1]));
            assertThrows(NullPointerException.class, () -> c.put("k", null));
            assertThrows(NullPointerException.class, () -> c.get(null));
            assertEquals("13 is unlucky", assertThrows(UnsupportedOperationException.class,
                    () -> c.put("k", new byte[13])).getMessage());
            IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class,
                    () -> c.put("k", new byte[64 * 1024]));
            assertTrue(tooBig.getMessage().contains("more than the cache's capacity of 65536 bytes"),
                    tooBig.getMessage());

            CacheStats after = c.stats();
            assertArrayEquals(new byte[] {1}, c.get("k"));
            assertEquals(before.entries(), after.entries());
            assertEquals(before.liveBytes(), after.liveBytes());
            assertEquals(before.weightedBytes(), after.weightedBytes());
        }
        Serializer<String> lying = new Serializer<>() {
            @Override
            public long size(String v) {
                return -1;
            }

            @Override
            public void write(String v, MemorySegment target) {}

            @Override
            public String read(MemorySegment source) {
                return "";
            }
        };
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), lying).capacity(1024).build()) {
            assertThrows(IllegalArgumentException.class, () -> c.put("k", "v"));
            assertEquals(0, c.size());
        }
        assertThrows(IllegalStateException.class,
                () -> OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).build());
        assertThrows(IllegalArgumentException.class,
                () -> OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).capacity(0));
        assertThrows(IllegalArgumentException.class,
                () -> OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).expireAfterWrite(Duration.ZERO));
    }

    /** A value length of the randomized runs: mostly under 8 KiB, one in fifty of 16-114 KiB. */
    private static int randomLength(java.util.Random rnd) {
        return rnd.nextInt(50) == 0 ? 16_384 + rnd.nextInt(100_000) : rnd.nextInt(8_192);
    }

    /** {@return {@code len} bytes, each the low byte of {@code key}} */
    private static byte[] filled(long key, int len) {
        byte[] v = new byte[len];
        java.util.Arrays.fill(v, (byte) key);
        return v;
    }

    /** A value read back, if there is one, is the one last stored for its key. */
    private static void assertIntactIfThere(long key, byte[] v, java.util.Map<Long, Integer> lengths) {
        if (v != null) {
            assertEquals((int) lengths.get(key), v.length);
            for (byte b : v) {
                assertEquals((byte) key, b);
            }
        }
    }

    /** The charge and the live bytes of {@code s} are those of the entries found in the cache. */
    private static void assertChargedAreTheEntries(OffHeapCache<Long, byte[]> c, java.util.Map<Long, Integer> lengths,
            CacheStats s, int op) {
        long charged = 0;
        long live = 0;
        for (var e : lengths.entrySet()) {
            if (c.containsKey(e.getKey())) {
                charged += c.charge(8, e.getValue());
                live += e.getValue();
            }
        }
        assertEquals(charged, s.weightedBytes(), "op " + op);
        assertEquals(live, s.liveBytes(), "op " + op);
    }

    @Test
    void staysWithinItsCapacityAfterEveryOperationWithDeadlinesAndCapacityChanges() {
        java.util.Random rnd = new java.util.Random(7);
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(1 << 20).variableExpiry().ticker(now::get).build()) {
            java.util.Map<Long, Integer> lengths = new java.util.HashMap<>();
            for (int op = 0; op < 20_000; op++) {
                long key = rnd.nextInt(2_000);
                int r = rnd.nextInt(100);
                if (r < 40) {
                    int len = randomLength(rnd);
                    byte[] v = filled(key, len);
                    if (rnd.nextBoolean()) {
                        c.put(key, v, Duration.ofMillis(1 + rnd.nextInt(50)));
                    } else {
                        c.put(key, v);
                    }
                    lengths.put(key, len);
                } else if (r < 45) {
                    c.remove(key);
                    lengths.remove(key);
                } else if (r < 46) {
                    c.setCapacity((256 << 10) + rnd.nextInt(2 << 20));
                } else {
                    now.addAndGet(rnd.nextInt(100_000)); // up to 0.1 ms a step
                    assertIntactIfThere(key, c.get(key), lengths);
                }
                CacheStats s = c.stats();
                assertTrue(s.weightedBytes() <= c.capacity(), "op " + op + ": " + s.weightedBytes() + " > " + c.capacity());
                if (op % 1000 == 999) {
                    c.cleanUp(); // the expired entries leave, then the charges are those of the entries found
                    assertChargedAreTheEntries(c, lengths, c.stats(), op);
                }
            }
            assertTrue(c.stats().expirations() > 100, "deadlines passed: " + c.stats().expirations());
            assertTrue(c.stats().evictions() > 100, "capacity changes evicted: " + c.stats().evictions());
        }
    }

    @Test
    void staysWithinItsCapacityAfterEveryOperation() {
        long capacity = 1 << 20;
        java.util.Random rnd = new java.util.Random(42);
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(capacity).build()) {
            java.util.Map<Long, Integer> lengths = new java.util.HashMap<>();
            for (int op = 0; op < 20_000; op++) {
                long key = rnd.nextInt(2_000);
                int r = rnd.nextInt(100);
                if (r < 45) {
                    int len = randomLength(rnd);
                    byte[] v = filled(key, len);
                    c.put(key, v);
                    lengths.put(key, len);
                } else if (r < 50) {
                    c.remove(key);
                    lengths.remove(key);
                } else {
                    assertIntactIfThere(key, c.get(key), lengths);
                }
                CacheStats s = c.stats();
                assertTrue(s.weightedBytes() <= capacity, "op " + op + ": " + s.weightedBytes() + " > " + capacity);
                if (op % 1000 == 999) {
                    // what the index charges is what the entries really take
                    assertChargedAreTheEntries(c, lengths, s, op);
                }
            }
            assertTrue(c.stats().evictions() > 0, "the run must have evicted");
        }
    }

    @Test
    void expiresAfterWriteAndAfterAccessOnTheTicker() {
        AtomicLong now = new AtomicLong();
        List<RemovalCause> causes = new ArrayList<>();
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(1 << 20).expireAfterWrite(Duration.ofSeconds(10)).ticker(now::get)
                .removalListener((k, v, cause) -> causes.add(cause)).build()) {
            c.put("k", new byte[100]);
            now.addAndGet(Duration.ofSeconds(9).toNanos());
            assertArrayEquals(new byte[100], c.get("k"));
            now.addAndGet(Duration.ofSeconds(2).toNanos());
            assertNull(c.get("k"));
            c.cleanUp();
            assertEquals(List.of(RemovalCause.EXPIRED), causes);
            assertEquals(1, c.stats().expirations());
            assertEquals(0, c.stats().evictions(), "an expiration is not an eviction for size");
            assertEquals(0, c.stats().liveBytes());
        }
        now.set(0);
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(1 << 20).expireAfterAccess(Duration.ofSeconds(10)).ticker(now::get).build()) {
            c.put("read", new byte[1]);
            c.put("idle", new byte[1]);
            for (int i = 0; i < 5; i++) {
                now.addAndGet(Duration.ofSeconds(4).toNanos());
                assertArrayEquals(new byte[1], c.get("read"));
            }
            assertArrayEquals(new byte[1], c.get("read"));
            assertNull(c.get("idle"));
        }
    }

    @Test
    void entriesLiveTheirOwnTimeToLive() {
        AtomicLong now = new AtomicLong();
        List<String> removed = new ArrayList<>();
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).variableExpiry().ticker(now::get)
                .removalListener((k, v, cause) -> removed.add(k + "=" + v + ":" + cause)).build()) {
            c.put("short", "s", Duration.ofSeconds(1));
            c.put("long", "l", Duration.ofHours(1));
            c.put("forever", "f");
            assertFalse(c.putIfAbsent("short", "other", Duration.ofDays(1)), "present: left as it is");
            assertTrue(c.putIfAbsent("late", "x", Duration.ofSeconds(3)));
            now.addAndGet(Duration.ofMillis(999).toNanos());
            assertEquals("s", c.get("short"));
            now.addAndGet(Duration.ofMillis(1).toNanos());
            assertNull(c.get("short"), "its time to live is over");
            assertFalse(c.containsKey("short"));
            assertEquals("l", c.get("long"));
            assertEquals("x", c.get("late"));
            assertTrue(c.putIfAbsent("short", "again", Duration.ofSeconds(5)), "an expired entry is absent");
            assertEquals("again", c.get("short"));
            now.addAndGet(Duration.ofDays(365).toNanos());
            assertEquals("f", c.get("forever"), "stored without a time to live");
            assertNull(c.get("long"));
            assertNull(c.get("short"));
            c.cleanUp();
            assertEquals(1, c.size());
            assertEquals(4, c.stats().expirations(), "short (met by the putIfAbsent's write), then long, late and short again");
            assertTrue(removed.containsAll(List.of("short=s:EXPIRED", "long=l:EXPIRED", "late=x:EXPIRED", "short=again:EXPIRED")),
                    removed.toString());
            c.put("forever", "g", Duration.ofSeconds(1));
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            assertNull(c.get("forever"), "a put with a time to live replaces the entry's expiry too");
        }
    }

    @Test
    void entriesPastTheirOwnDeadlineLeaveAsWritesGoByUnasked() {
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(16 << 20).variableExpiry().ticker(now::get).build()) {
            // due entries in the middle of the queues, none at a head: only the slot cursor finds them
            for (long k = 0; k < 1_000; k++) {
                c.put(k, new byte[64], Duration.ofHours(1));
            }
            for (long k = 1_000; k < 2_000; k++) {
                c.put(k, new byte[64], Duration.ofSeconds(1));   // never asked for again
            }
            for (long k = 2_000; k < 4_000; k++) {
                c.put(k, new byte[64], Duration.ofHours(1));
            }
            now.addAndGet(Duration.ofSeconds(2).toNanos());
            for (long k = 10_000; k < 15_000; k++) {
                c.put(k, new byte[64]);                           // other keys, no time to live
            }
            assertEquals(1_000, c.stats().expirations(), "each write checks two slots: 5,000 writes went round them all");
            assertEquals(8_000, c.size());
            for (long k = 0; k < 4_000; k++) {
                assertEquals(k < 1_000 || k >= 2_000, c.containsKey(k), "key " + k);
            }
        }
    }

    @Test
    void aTimeToLivePerEntryIsCheckedAndChargedAndMeetsTheOtherExpiries() {
        try (OffHeapCache<String, String> plain = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).build()) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> plain.put("k", "v", Duration.ofSeconds(1)));
            assertTrue(e.getMessage().contains("variableExpiry()"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> plain.putIfAbsent("k", "v", Duration.ofSeconds(1)));
            assertFalse(plain.containsKey("k"), "nothing stored");
            assertEquals(0, plain.stats().liveBytes(), "and nothing allocated");
        }
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).variableExpiry().expireAfterWrite(Duration.ofSeconds(10)).ticker(now::get).build();
             OffHeapCache<String, String> plain = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).expireAfterWrite(Duration.ofSeconds(10)).build()) {
            assertThrows(IllegalArgumentException.class, () -> c.put("k", "v", Duration.ZERO));
            assertThrows(IllegalArgumentException.class, () -> c.put("k", "v", Duration.ofNanos(-1)));
            assertThrows(NullPointerException.class, () -> c.put("k", "v", null));
            assertFalse(c.containsKey("k"));
            assertEquals(plain.charge(1, 1) + OffHeapCache.EXPIRY_OVERHEAD, c.charge(1, 1), "the deadline is charged");
            c.put("k", "v", ChronoUnit.FOREVER.getDuration()); // longer than nanoseconds can say: no deadline
            now.addAndGet(Duration.ofSeconds(10).toNanos());
            assertNull(c.get("k"), "expiry after write comes first");
        }
    }

    @Test
    void forEachKeySeesEveryLiveKeyOnceAndLetsTheActionUseTheCache() {
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(8 << 20).variableExpiry().ticker(now::get).build()) {
            Set<String> expected = new HashSet<>();
            for (int i = 0; i < 3_000; i++) {
                if (i % 10 == 0) {
                    c.put("k" + i, "v", Duration.ofSeconds(1));
                } else {
                    c.put("k" + i, "v");
                    expected.add("k" + i);
                }
            }
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            long hits = c.stats().hits();
            List<String> seen = new ArrayList<>();
            c.forEachKey(k -> {
                seen.add(k);
                if (k.endsWith("7")) {
                    assertTrue(c.remove(k), "the action may write to the cache");
                }
            });
            assertEquals(expected.size(), seen.size(), "each key once");
            assertEquals(expected, new HashSet<>(seen), "expired keys are not seen");
            assertEquals(hits, c.stats().hits(), "not an access");
            expected.removeIf(k -> k.endsWith("7"));
            Set<String> after = new HashSet<>();
            c.forEachKey(after::add);
            assertEquals(expected, after);
            assertThrows(NullPointerException.class, () -> c.forEachKey(null));
        }
        OffHeapCache<Long, byte[]> longs = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(1 << 20).build();
        OffHeapCache<byte[], byte[]> arrays = OffHeapCache.builder(Serializers.bytes(), Serializers.bytes())
                .capacity(1 << 20).build();
        try (longs; arrays) {
            for (long k = -5; k < 5; k++) {
                longs.put(k, new byte[1]);
                arrays.put(new byte[] {(byte) k, 9}, new byte[1]);
            }
            Set<Long> longKeys = new HashSet<>();
            longs.forEachKey(longKeys::add);
            assertEquals(LongStream.range(-5, 5).boxed().collect(Collectors.toSet()), longKeys);
            List<byte[]> arrayKeys = new ArrayList<>();
            arrays.forEachKey(arrayKeys::add);
            assertEquals(10, arrayKeys.size());
            for (byte[] k : arrayKeys) {
                assertArrayEquals(new byte[1], arrays.get(k), "a key handed out finds its value");
            }
        }
        assertThrows(IllegalStateException.class, () -> longs.forEachKey(k -> { }));
    }

    @Test
    void hotKeysAreTheMostUsedKeysFirstAndLeaveTheCacheAsItWas() {
        AtomicLong now = new AtomicLong();
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(8 << 20).variableExpiry().ticker(now::get).build()) {
            for (long k = 0; k < 2_000; k++) {
                c.put(k, new byte[8]);
            }
            c.put(5_000L, new byte[8], Duration.ofSeconds(1));
            for (int round = 0; round < 12; round++) {
                for (long k = 100; k < 110; k++) {
                    assertNotNull(c.get(k));
                }
                if (round < 4) {
                    for (long k = 200; k < 205; k++) {
                        assertNotNull(c.get(k)); // warm, not as hot
                    }
                }
                assertNotNull(c.get(5_000L)); // the hottest of all, but it expires
            }
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            CacheStats before = c.stats();
            List<Long> hot = c.hotKeys(15);
            assertEquals(15, hot.size());
            assertEquals(LongStream.range(100, 110).boxed().collect(Collectors.toSet()), new HashSet<>(hot.subList(0, 10)),
                    "the ten hottest first: " + hot);
            assertEquals(LongStream.range(200, 205).boxed().collect(Collectors.toSet()), new HashSet<>(hot.subList(10, 15)),
                    "then the warm ones: " + hot);
            assertEquals(before.hits(), c.stats().hits(), "not an access");
            assertEquals(before.misses(), c.stats().misses());
            assertEquals(List.of(), c.hotKeys(0));
            assertEquals(2_000, c.hotKeys(1_000_000).size(), "all unexpired keys when n is larger");
            assertThrows(IllegalArgumentException.class, () -> c.hotKeys(-1));
            for (Long k : c.hotKeys(50)) {
                assertNotNull(c.get(k), "a key handed out finds its value");
            }
        }
        OffHeapCache<byte[], byte[]> arrays = OffHeapCache.builder(Serializers.bytes(), Serializers.bytes())
                .capacity(1 << 20).build();
        try (arrays) {
            arrays.put(new byte[] {1, 2}, new byte[1]);
            arrays.get(new byte[] {1, 2});
            arrays.put(new byte[] {3}, new byte[1]);
            List<byte[]> hot = arrays.hotKeys(1);
            assertEquals(1, hot.size());
            assertArrayEquals(new byte[] {1, 2}, hot.get(0));
        }
        assertThrows(IllegalStateException.class, () -> arrays.hotKeys(1));
    }

    @Test
    void forEachKeyIsWeaklyConsistentUnderConcurrentWrites() throws Exception {
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(64 << 20).build()) {
            for (int i = 0; i < 2_000; i++) {
                c.put("stable" + i, new byte[16]);
            }
            AtomicBoolean stop = new AtomicBoolean();
            Thread writer = new Thread(() -> {
                for (int i = 0; !stop.get(); i++) {
                    c.put("churn" + (i % 500), new byte[16 + i % 64]);
                    c.remove("churn" + ((i + 250) % 500));
                    c.put("stable" + (i % 2_000), new byte[16]); // a replace keeps the key stored
                }
            });
            writer.start();
            try {
                for (int round = 0; round < 50; round++) {
                    Map<String, Integer> times = new HashMap<>();
                    c.forEachKey(k -> times.merge(k, 1, Integer::sum));
                    for (int i = 0; i < 2_000; i++) {
                        assertEquals(1, times.getOrDefault("stable" + i, 0), "stable" + i + " in round " + round);
                    }
                    int r = round;
                    times.forEach((k, n) -> assertEquals(1, n, k + " seen twice in round " + r));
                }
            } finally {
                stop.set(true);
                writer.join();
            }
        }
    }

    @Test
    void bulkOperationsCheckEveryKeyFirst() {
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(1 << 20).build()) {
            Map<String, String> entries = new LinkedHashMap<>();
            for (int i = 0; i < 10; i++) {
                entries.put("k" + i, "v" + i);
            }
            c.putAll(entries);
            assertEquals(10, c.size());
            CacheStats before = c.stats();
            Map<String, String> got = c.getAllPresent(List.of("k3", "absent", "k1", "k3"));
            assertEquals(List.of("k3", "k1"), new ArrayList<>(got.keySet()), "in the order asked, absent ones left out");
            assertEquals("v3", got.get("k3"));
            assertEquals(3, c.stats().hits() - before.hits(), "k3 twice and k1");
            assertEquals(1, c.stats().misses() - before.misses());
            assertEquals(2, c.removeAll(List.of("k0", "k1", "absent")));
            assertEquals(8, c.size());

            Map<String, String> withNull = new HashMap<>();
            withNull.put("x", "1");
            withNull.put("y", null);
            assertThrows(NullPointerException.class, () -> c.putAll(withNull));
            assertFalse(c.containsKey("x"), "nothing stored when a value is null");
            assertThrows(NullPointerException.class, () -> c.removeAll(Arrays.asList("k2", null)));
            assertTrue(c.containsKey("k2"), "nothing removed when a key is null");
            assertThrows(NullPointerException.class, () -> c.getAllPresent(Arrays.asList("k2", null)));
            assertThrows(NullPointerException.class, () -> c.getAllPresent(null));
            assertThrows(NullPointerException.class, () -> c.putAll(null));
            c.close();
            assertThrows(IllegalStateException.class, () -> c.getAllPresent(List.of("k2")));
            assertThrows(IllegalStateException.class, () -> c.putAll(Map.of("k", "v")));
            assertThrows(IllegalStateException.class, () -> c.removeAll(List.of("k2")));
        }
    }

    @Test
    void setCapacityEvictsAtOnceWhenItShrinksAndMakesRoomWhenItGrows() {
        List<RemovalCause> causes = new ArrayList<>();
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(4 << 20).removalListener((k, v, cause) -> causes.add(cause)).build()) {
            for (int i = 0; i < 4_000; i++) {
                c.put("k" + i, new byte[500]);
            }
            assertEquals(4_000, c.size(), "all fit");
            c.setCapacity(1 << 20);
            assertEquals(1 << 20, c.capacity());
            assertTrue(c.stats().weightedBytes() <= 1 << 20, c.stats().toString());
            assertTrue(c.size() < 2_000, "about a quarter left: " + c.size());
            assertEquals(4_000 - c.size(), c.stats().evictions());
            assertTrue(causes.stream().allMatch(cause -> cause == RemovalCause.SIZE));
            for (int i = 0; i < 4_000; i++) {
                c.put("again" + i, new byte[500]);
                assertTrue(c.stats().weightedBytes() <= 1 << 20, "the new bound holds after every put");
            }
            c.setCapacity(4 << 20);
            for (int i = 0; i < 4_000; i++) {
                c.put("more" + i, new byte[500]);
            }
            assertTrue(c.size() > 3_000, "room again: " + c.size());

            long big = c.charge(OffHeapCache.ENTRY_OVERHEAD, 600 << 10);
            c.put("big", new byte[600 << 10]);
            c.setCapacity(512 << 10);
            assertFalse(c.containsKey("big"), "an entry larger than the new capacity leaves");
            assertTrue(c.stats().weightedBytes() <= 512 << 10);
            assertTrue(big > 512 << 10);
            assertThrows(IllegalArgumentException.class, () -> c.put("big", new byte[600 << 10]),
                    "checked against the new capacity");
            assertThrows(IllegalArgumentException.class, () -> c.setCapacity(0));
            assertThrows(IllegalArgumentException.class, () -> c.setCapacity(-1));
            assertEquals(512 << 10, c.capacity(), "unchanged by bad input");
            c.close();
            assertThrows(IllegalStateException.class, () -> c.setCapacity(1 << 20));
        }
    }

    @Test
    void theBoundHoldsOnceWritesRacingCapacityChangesReturn() throws Exception {
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(2 << 20).build()) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> writers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long seed = t;
                Thread w = new Thread(() -> {
                    java.util.Random r = new java.util.Random(seed);
                    try {
                        while (!stop.get()) {
                            c.put((long) r.nextInt(20_000), new byte[r.nextInt(4_000)]);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                w.start();
                writers.add(w);
            }
            try {
                for (int i = 0; i < 200; i++) {
                    c.setCapacity(i % 2 == 0 ? 256 << 10 : 2 << 20);
                }
                c.setCapacity(300 << 10);
            } finally {
                stop.set(true);
                for (Thread w : writers) {
                    w.join();
                }
            }
            assertNull(failure.get(), () -> "a writer failed: " + failure.get());
            assertTrue(c.stats().weightedBytes() <= 300 << 10,
                    "charged " + c.stats().weightedBytes() + " after the last writes returned");
            c.cleanUp();
            assertTrue(c.stats().liveBytes() <= 300 << 10);
        }
    }

    @Test
    void listenerSeesEachRemovalWithItsCause() {
        List<String> seen = new ArrayList<>();
        try (OffHeapCache<String, String> c = OffHeapCache.builder(Serializers.utf8(), Serializers.utf8())
                .capacity(64 * 1024).removalListener((k, v, cause) -> seen.add(k + "=" + v + ":" + cause)).build()) {
            c.put("a", "1");
            c.put("a", "2");
            c.remove("a");
            assertEquals(List.of("a=1:REPLACED", "a=2:EXPLICIT"), seen);
            seen.clear();
            for (int i = 0; i < 2_000; i++) {
                c.put("k" + i, "v" + i);
            }
            c.cleanUp();
            assertFalse(seen.isEmpty());
            for (String s : seen) {
                String[] kv = s.split("[=:]");
                assertEquals("v" + kv[0].substring(1), kv[1], s);
                assertEquals("SIZE", kv[2]);
            }
            assertEquals(seen.size(), c.stats().evictions());
        }
    }

    @Test
    void everyCallAfterCloseThrows() {
        OffHeapCache<String, byte[]> c = bytesCache(1 << 20);
        c.put("k", new byte[10]);
        c.close();
        c.close();
        assertEquals("the cache is closed", assertThrows(IllegalStateException.class, () -> c.get("k")).getMessage());
        assertThrows(IllegalStateException.class, () -> c.put("k", new byte[1]));
        assertThrows(IllegalStateException.class, () -> c.remove("k"));
        assertThrows(IllegalStateException.class, c::stats);
        assertThrows(IllegalStateException.class, () -> c.computeIfAbsent("k", k -> new byte[1]));
    }
}
