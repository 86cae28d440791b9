package org.spanheap.jcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.cache.Cache;
import javax.cache.CacheException;
import javax.cache.CacheManager;
import javax.cache.Caching;
import javax.cache.configuration.FactoryBuilder;
import javax.cache.configuration.MutableCacheEntryListenerConfiguration;
import javax.cache.configuration.MutableConfiguration;
import javax.cache.event.CacheEntryCreatedListener;
import javax.cache.event.CacheEntryEvent;
import javax.cache.spi.CachingProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializer;
import org.spanheap.cache.Serializers;

/** The provider's own contract beside the TCK: discovery, serializers, bad input, unwrap. */
class SpanheapJCacheTest {

    private CacheManager manager;

    @BeforeEach
    void open() {
        manager = Caching.getCachingProvider().getCacheManager();
    }

    @AfterEach
    void close() {
        for (String name : manager.getCacheNames()) {
            manager.destroyCache(name);
        }
    }

    @Test
    void serviceLoaderFindsTheProvider() {
        CachingProvider provider = Caching.getCachingProvider();
        assertInstanceOf(SpanheapCachingProvider.class, provider);
        assertSame(manager, provider.getCacheManager());
    }

    @Test
    void serializableValuesGoThroughJavaSerializationAndComeBackAsCopies() {
        Cache<Long, ArrayList<String>> cache = manager.createCache("copies", new MutableConfiguration<Long, ArrayList<String>>());
        ArrayList<String> value = new ArrayList<>(List.of("a", "b"));
        cache.put(1L, value);
        value.add("c"); // a change after the put is not seen: store-by-value
        ArrayList<String> read = cache.get(1L);
        assertEquals(List.of("a", "b"), read);
        read.add("d");
        assertEquals(List.of("a", "b"), cache.get(1L));
    }

    @Test
    void explicitSerializersAndCapacityComeFromOffHeapConfiguration() {
        OffHeapConfiguration<String, byte[]> config = new OffHeapConfiguration<String, byte[]>()
                .setCapacity(1 << 20).setSerializers(Serializers.utf8(), Serializers.bytes());
        config.setTypes(String.class, byte[].class);
        Cache<String, byte[]> cache = manager.createCache("bytes", config);
        cache.put("k", new byte[] {1, 2, 3});
        assertEquals(3, cache.get("k").length);
        @SuppressWarnings("unchecked")
        OffHeapCache<String, ?> store = cache.unwrap(OffHeapCache.class);
        assertEquals(1 << 20, store.capacity());
        assertEquals(1, store.size());
    }

    @Test
    void aFailingSerializerLeavesTheCacheUnchangedAndSurfacesAsCacheException() {
        RuntimeException boom = new IllegalArgumentException("boom");
        Serializer<String> failing = new Serializer<>() {
            @Override
            public long size(String value) {
                if (value.equals("bad")) {
                    throw boom;
                }
                return Serializers.utf8().size(value);
            }

            @Override
            public void write(String value, MemorySegment target) {
                Serializers.utf8().write(value, target);
            }

            @Override
            public String read(MemorySegment source) {
                return Serializers.utf8().read(source);
            }
        };
        OffHeapConfiguration<String, String> config = new OffHeapConfiguration<String, String>()
                .setSerializers(Serializers.utf8(), failing);
        config.setTypes(String.class, String.class);
        Cache<String, String> cache = manager.createCache("failing", config);
        cache.put("k", "good");
        CacheException e = assertThrows(CacheException.class, () -> cache.put("k", "bad"));
        assertSame(boom, e.getCause());
        assertEquals("good", cache.get("k"));
        assertThrows(CacheException.class, () -> cache.put("other", "bad"));
        assertFalse(cache.containsKey("other"));
    }

    @Test
    void aSerializersOwnIllegalStateExceptionSurfacesAsCacheExceptionInWriteAndRead() {
        // The heap's move signal is an IllegalStateException on a closed segment; one thrown while
        // the segment is open is the serializer's own failure and must not pass as that signal.
        IllegalStateException writeFailure = new IllegalStateException("write refused");
        IllegalStateException readFailure = new IllegalStateException("read refused");
        Serializer<String> failing = new Serializer<>() {
            @Override
            public long size(String value) {
                return Serializers.utf8().size(value);
            }

            @Override
            public void write(String value, MemorySegment target) {
                if (value.equals("bad")) {
                    throw writeFailure;
                }
                Serializers.utf8().write(value, target);
            }

            @Override
            public String read(MemorySegment source) {
                String value = Serializers.utf8().read(source);
                if (value.equals("unreadable")) {
                    throw readFailure;
                }
                return value;
            }
        };
        OffHeapConfiguration<String, String> config = new OffHeapConfiguration<String, String>()
                .setSerializers(Serializers.utf8(), failing);
        config.setTypes(String.class, String.class);
        Cache<String, String> cache = manager.createCache("failing-state", config);
        cache.put("k", "good");
        CacheException written = assertThrows(CacheException.class, () -> cache.put("k", "bad"));
        assertSame(writeFailure, written.getCause());
        assertEquals("good", cache.get("k"));
        cache.put("u", "unreadable");
        CacheException read = assertThrows(CacheException.class, () -> cache.get("u"));
        assertSame(readFailure, read.getCause());
    }

    @Test
    void aValueThatIsNotSerializableIsRefusedWithCacheException() {
        Cache<Long, Object> cache = manager.createCache("objects", new MutableConfiguration<Long, Object>());
        CacheException e = assertThrows(CacheException.class, () -> cache.put(1L, new Object()));
        assertTrue(e.getMessage().contains("java.lang.Object"), e.getMessage());
        assertFalse(cache.containsKey(1L));
    }

    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void badInputGetsJCacheExceptions() {
        Cache<Long, String> cache = manager.createCache("typed",
                new MutableConfiguration<Long, String>().setTypes(Long.class, String.class));
        assertThrows(NullPointerException.class, () -> cache.put(null, "v"));
        assertThrows(NullPointerException.class, () -> cache.put(1L, null));
        assertThrows(NullPointerException.class, () -> cache.get(null));
        Cache raw = cache;
        ClassCastException cce = assertThrows(ClassCastException.class, () -> raw.put("not a long", "v"));
        assertTrue(cce.getMessage().contains("java.lang.String"), cce.getMessage());
        assertThrows(ClassCastException.class, () -> raw.put(1L, 2L));
        assertThrows(UnsupportedOperationException.class, () -> manager.createCache("byReference",
                new MutableConfiguration<Long, String>().setStoreByValue(false)));
        cache.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> cache.get(1L));
        assertTrue(closed.getMessage().contains("typed"), closed.getMessage());
    }

    @Test
    void aClosedManagerRefusesCalls() {
        CacheManager other = Caching.getCachingProvider().getCacheManager(java.net.URI.create("urn:test:closed"), null);
        Cache<Long, String> cache = other.createCache("c", new MutableConfiguration<Long, String>());
        other.close();
        assertTrue(cache.isClosed());
        assertThrows(IllegalStateException.class, () -> other.getCache("c"));
        assertThrows(IllegalStateException.class, () -> cache.put(1L, "v"));
    }

    @Test
    void statisticsAndConfigurationMXBeansAreRegistered() throws Exception {
        Cache<Long, String> cache = manager.createCache("managed", new MutableConfiguration<Long, String>()
                .setTypes(Long.class, String.class).setStatisticsEnabled(true).setManagementEnabled(true));
        cache.put(1L, "one");
        cache.get(1L);
        cache.get(2L);
        var server = ManagementFactory.getPlatformMBeanServer();
        var stats = ManagementBeans.name("CacheStatistics", manager.getURI().toString(), "managed");
        assertEquals(1L, server.getAttribute(stats, "CacheHits"));
        assertEquals(1L, server.getAttribute(stats, "CacheMisses"));
        assertEquals(1L, server.getAttribute(stats, "CachePuts"));
        var conf = ManagementBeans.name("CacheConfiguration", manager.getURI().toString(), "managed");
        assertEquals("java.lang.Long", server.getAttribute(conf, "KeyType"));
        manager.destroyCache("managed");
        assertFalse(server.isRegistered(stats));
    }

    /** Counts created events; static so that the configuration's factory can make it by class. */
    public static final class CreatedLatch implements CacheEntryCreatedListener<Long, String> {
        static final CountDownLatch LATCH = new CountDownLatch(3);
        static volatile Thread thread;

        @Override
        public void onCreated(Iterable<CacheEntryEvent<? extends Long, ? extends String>> events) {
            for (CacheEntryEvent<? extends Long, ? extends String> e : events) {
                thread = Thread.currentThread();
                LATCH.countDown();
            }
        }
    }

    @Test
    void asynchronousListenersRunOnAnotherThread() throws Exception {
        Cache<Long, String> cache = manager.createCache("async", new MutableConfiguration<Long, String>());
        cache.registerCacheEntryListener(new MutableCacheEntryListenerConfiguration<>(
                FactoryBuilder.factoryOf(CreatedLatch.class), null, false, false));
        cache.put(1L, "a");
        cache.put(2L, "b");
        cache.put(3L, "c");
        assertTrue(CreatedLatch.LATCH.await(10, TimeUnit.SECONDS));
        assertFalse(CreatedLatch.thread == Thread.currentThread());
        assertNull(cache.get(4L));
    }

    @Test
    void compoundOperationsAreAtomicPerKey() throws Exception {
        Cache<Long, Long> cache = manager.createCache("counters", new MutableConfiguration<Long, Long>()
                .setTypes(Long.class, Long.class));
        int threads = 4;
        int rounds = 2_000;
        cache.put(1L, 0L);
        cache.put(2L, 0L);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < rounds; i++) {
                    // an entry processor's read-modify-write
                    cache.invoke(1L, (entry, args) -> {
                        entry.setValue(entry.getValue() + 1);
                        return null;
                    });
                    // a compare-and-set loop: replace(k, old, new) fails when another write came between
                    for (;;) {
                        Long old = cache.get(2L);
                        if (cache.replace(2L, old, old + 1)) {
                            break;
                        }
                    }
                    // plain puts race the two above on other keys' stripes and on their own
                    cache.put(3L + (i & 7), (long) i);
                }
            }));
        }
        for (Thread w : workers) {
            w.join();
        }
        assertEquals((long) threads * rounds, cache.get(1L));
        assertEquals((long) threads * rounds, cache.get(2L));
    }
}
