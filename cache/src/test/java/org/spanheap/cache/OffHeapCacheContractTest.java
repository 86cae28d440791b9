package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.spanheap.StaleHandleException;

/**
 * What a cache promises its callers beyond storing and finding values: values
 * cannot be changed through a read, a value never shows another's bytes, the
 * statistics count each call once, and a closed cache answers nothing.
 */
class OffHeapCacheContractTest {

    private static OffHeapCache<String, byte[]> bytesCache() {
        return OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).capacity(1 << 20).build();
    }

    @Test
    void aReaderCannotWriteTheValue() {
        try (OffHeapCache<String, byte[]> c = bytesCache()) {
            c.put("k", new byte[] {1, 2, 3});
            assertThrows(IllegalArgumentException.class,
                    () -> c.get("k", s -> {
                        s.set(ValueLayout.JAVA_BYTE, 0, (byte) 9);
                        return null;
                    }));
            assertThrows(IllegalArgumentException.class, () -> c.get("k", s -> s.fill((byte) 9)));
            assertTrue(c.get("k", MemorySegment::isReadOnly));
            assertArrayEquals(new byte[] {1, 2, 3}, c.get("k"), "the value is as it was stored");
        }
    }

    @Test
    void aValueSerializerReadsAReadOnlySegment() {
        List<Boolean> readOnly = new java.util.ArrayList<>();
        Serializer<byte[]> recording = new Serializer<>() {
            @Override
            public long size(byte[] value) {
                return value.length;
            }

            @Override
            public void write(byte[] value, MemorySegment target) {
                MemorySegment.copy(MemorySegment.ofArray(value), 0, target, 0, value.length);
            }

            @Override
            public byte[] read(MemorySegment source) {
                readOnly.add(source.isReadOnly());
                return source.toArray(ValueLayout.JAVA_BYTE);
            }
        };
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), recording).capacity(1 << 20)
                .removalListener((k, v, cause) -> { }).build()) {
            c.put("k", new byte[] {1});
            c.get("k");
            c.computeIfAbsent("k", k -> new byte[] {2});
            c.remove("k"); // the listener is given the value read back
            assertEquals(List.of(true, true, true), readOnly);
        }
    }

    /**
     * A serializer of {@code long[]} that writes only the elements that are not zero, as one
     * may when the target is assumed to start zeroed (as arrays and {@code Arena.allocate} do).
     */
    private static final Serializer<long[]> SPARSE_LONGS = new Serializer<>() {
        @Override
        public long size(long[] value) {
            return value.length * 8L;
        }

        @Override
        public void write(long[] value, MemorySegment target) {
            for (int i = 0; i < value.length; i++) {
                if (value[i] != 0) {
                    target.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, value[i]);
                }
            }
        }

        @Override
        public long[] read(MemorySegment source) {
            return source.toArray(ValueLayout.JAVA_LONG_UNALIGNED);
        }
    };

    @Test
    void bytesASerializerLeavesUnwrittenAreZerosNotThoseOfAFreedValue() {
        int keys = 1_000;
        long[] ones = new long[32];
        Arrays.fill(ones, -1L);
        long[] zeros = new long[32];
        long[] mostlyZeros = new long[32];
        mostlyZeros[3] = 7;
        try (OffHeapCache<Long, long[]> c = OffHeapCache.builder(Serializers.longs(), SPARSE_LONGS)
                .capacity(16 << 20).build()) {
            for (int round = 0; round < 4; round++) {
                for (long k = 0; k < keys; k++) {
                    c.put(k, ones);
                }
                for (long k = 0; k < keys; k++) {
                    c.remove(k);
                }
                c.cleanUp();
                int leaked = 0;
                for (long k = 0; k < keys; k++) {
                    c.put(k, k % 2 == 0 ? zeros : mostlyZeros);
                    if (!Arrays.equals(k % 2 == 0 ? zeros : mostlyZeros, c.get(k))) {
                        leaked++;
                    }
                }
                assertEquals(0, leaked, "values that showed bytes of freed values, round " + round);
                int refused = 0;
                for (long k = 0; k < keys; k++) {
                    if (!c.replace(k, k % 2 == 0 ? zeros : mostlyZeros, ones)) {
                        refused++;
                    }
                }
                assertEquals(0, refused, "replace(k, the stored value, v) refused, round " + round);
            }
            assertTrue(c.putIfAbsent(-1L, zeros));
            assertArrayEquals(zeros, c.get(-1L));
            assertArrayEquals(mostlyZeros, c.computeIfAbsent(-2L, k -> mostlyZeros));
            assertArrayEquals(mostlyZeros, c.get(-2L));
        }
    }

    /**
     * A reader that throws {@link StaleHandleException} stands in for a value replaced between
     * the index's lookup and the read (the cache then looks again): the same path, deterministic.
     */
    @Test
    void aLookupThatLooksAgainCountsOnce() {
        try (OffHeapCache<String, byte[]> c = bytesCache()) {
            c.put("k", new byte[] {5});
            AtomicInteger tries = new AtomicInteger();
            Byte first = c.get("k", s -> {
                if (tries.incrementAndGet() < 3) {
                    throw new StaleHandleException(0);
                }
                return s.get(ValueLayout.JAVA_BYTE, 0);
            });
            assertEquals((byte) 5, first);
            assertEquals(3, tries.get());
            CacheStats s = c.stats();
            assertEquals(1, s.hits(), "one call, one hit: " + s);
            assertEquals(0, s.misses(), s.toString());

            tries.set(0);
            assertNull(c.get("k", v -> {
                tries.incrementAndGet();
                throw new StaleHandleException(0);
            }), "a lookup that gives up finds no value");
            assertTrue(tries.get() > 1, "it looked again: " + tries.get());
            s = c.stats();
            assertEquals(1, s.hits(), "a lookup that gives up counts no hit: " + s);
            assertEquals(1, s.misses(), "and one miss: " + s);
        }
    }

    @Test
    void everyKindOfLookupCountsOnce() {
        try (OffHeapCache<String, byte[]> c = bytesCache()) {
            c.put("a", new byte[] {1});
            c.get("a");
            c.get("b");
            c.get("a", s -> null); // a hit, whatever the reader returns
            c.getAllPresent(List.of("a", "b", "c"));
            c.computeIfAbsent("a", k -> new byte[1]); // found: a hit
            c.computeIfAbsent("d", k -> new byte[1]); // loaded: a miss
            c.computeIfAbsent("e", k -> null); // loader ran: a miss
            c.containsKey("a"); // not a lookup
            CacheStats s = c.stats();
            assertEquals(4, s.hits(), s.toString());
            assertEquals(5, s.misses(), s.toString());
        }
    }

    @Test
    void everyPublicMethodOfAClosedCacheThrows() throws Exception {
        OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(1 << 20).variableExpiry().build();
        c.put("k", new byte[10]);
        c.close();
        c.close(); // idempotent
        Map<String, Consumer<OffHeapCache<String, byte[]>>> calls = new LinkedHashMap<>();
        calls.put("get(Object)", x -> x.get("k"));
        calls.put("get(Object,Function)", x -> x.get("k", s -> s));
        calls.put("containsKey(Object)", x -> x.containsKey("k"));
        calls.put("put(Object,Object)", x -> x.put("k", new byte[1]));
        calls.put("put(Object,Object,Duration)", x -> x.put("k", new byte[1], Duration.ofSeconds(1)));
        calls.put("putIfAbsent(Object,Object)", x -> x.putIfAbsent("k", new byte[1]));
        calls.put("putIfAbsent(Object,Object,Duration)", x -> x.putIfAbsent("k", new byte[1], Duration.ofSeconds(1)));
        calls.put("replace(Object,Object,Object)", x -> x.replace("k", new byte[10], new byte[1]));
        calls.put("computeIfAbsent(Object,Function)", x -> x.computeIfAbsent("k", k -> new byte[1]));
        calls.put("getAllPresent(Iterable)", x -> x.getAllPresent(List.of()));
        calls.put("putAll(Map)", x -> x.putAll(Map.of()));
        calls.put("removeAll(Iterable)", x -> x.removeAll(List.of()));
        calls.put("forEachKey(Consumer)", x -> x.forEachKey(k -> { }));
        calls.put("hotKeys(int)", x -> x.hotKeys(1));
        calls.put("remove(Object)", x -> x.remove("k"));
        calls.put("clear()", OffHeapCache::clear);
        calls.put("cleanUp()", OffHeapCache::cleanUp);
        calls.put("size()", OffHeapCache::size);
        calls.put("name()", OffHeapCache::name);
        calls.put("capacity()", OffHeapCache::capacity);
        calls.put("setCapacity(long)", x -> x.setCapacity(1 << 20));
        calls.put("charge(long,long)", x -> x.charge(8, 8));
        calls.put("stats()", OffHeapCache::stats);
        calls.put("residentBytes()", OffHeapCache::residentBytes);

        // every public instance method but close() is in the list above
        Set<String> methods = new TreeSet<>();
        for (Method m : OffHeapCache.class.getDeclaredMethods()) {
            if (Modifier.isPublic(m.getModifiers()) && !Modifier.isStatic(m.getModifiers()) && !m.isSynthetic()
                    && !m.getName().equals("close")) {
                methods.add(m.getName() + "(" + String.join(",",
                        Arrays.stream(m.getParameterTypes()).map(Class::getSimpleName).toList()) + ")");
            }
        }
        assertEquals(methods, new TreeSet<>(calls.keySet()), "the calls tried are the public methods");

        for (Map.Entry<String, Consumer<OffHeapCache<String, byte[]>>> call : calls.entrySet()) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> call.getValue().accept(c),
                    call.getKey() + " after close()");
            assertEquals("the cache is closed", e.getMessage(), call.getKey());
        }
    }
}
