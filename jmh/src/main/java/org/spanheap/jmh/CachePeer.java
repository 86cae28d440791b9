package org.spanheap.jmh;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.ByteBuffer;
import org.caffinitas.ohc.CacheSerializer;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.OHCacheBuilder;
import org.ehcache.CacheManager;
import org.ehcache.config.builders.CacheConfigurationBuilder;
import org.ehcache.config.builders.CacheManagerBuilder;
import org.ehcache.config.builders.ResourcePoolsBuilder;
import org.ehcache.config.units.MemoryUnit;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

/**
 * A cache of {@code Long} keys and {@code byte[]} values, as {@link CacheBenchmark} drives it,
 * with a byte bound. Each peer is set up as its documentation suggests for that; every
 * {@code get} returns a fresh array (a copy out of off-heap memory, or Caffeine's own array).
 */
public interface CachePeer extends AutoCloseable {

    byte[] get(long key);

    void put(long key, byte[] value);

    /** {@return entries now held} */
    long size();

    /** {@return the peer's own memory figures, if it has any} */
    default String memory() {
        return "";
    }

    @Override
    void close();

    /** The caches compared, all bounded by the same number of bytes. */
    enum Kind {
        /**
         * spanheap-cache: values in a compacting heap, Caffeine's policy; bound counts the on-heap index too.
         * {@code -Dbench.heap=} a comma list tries heap settings: {@code owned} (thread-owned pages), {@code nobg} (no background thread),
         * {@code nokappa} (no compaction), {@code slow}/{@code fast}/{@code eager} (compaction passes every
         * 1 s / 10 ms / at once),
         * {@code batch256k} (reclaim batches of 256 KiB), {@code iota1m} (1 MiB per compaction round),
         * {@code spanpages} (pages from a span heap instead of the cache's default, one mapping each),
         * {@code kappa<n>} and {@code lanes<n>} (the heap's kappa and allocation lanes), {@code heappace}
         * (the heap's own pace, passes every 100 ms with 256 KiB rounds, instead of
         * {@link OffHeapCache#defaultHeap()}'s 10 ms and 1 MiB), {@code trace} (the heap's live, committed and
         * moved MiB every second, on stderr), {@code ttl} (the cache built with {@code variableExpiry()}:
         * every entry has a deadline word, and each write checks two slots for passed ones).
         */
        SPANHEAP,
        /** OHC 0.7.4 (linked implementation, its default LRU eviction); bound is OHC's own entry accounting. */
        OHC,
        /** OHC with its W-TinyLFU eviction. */
        OHC_TINYLFU,
        /** Caffeine, values on the Java heap; weigher: what an entry takes on the heap (measured: 91 B + key + array). */
        CAFFEINE_HEAP,
        /** Ehcache 3.12, an off-heap tier only; bound is Ehcache's own accounting. */
        EHCACHE_OFFHEAP,
        /** No cache: keeps nothing. The memory mode's baseline (what the JVM itself grows by). */
        NONE;

        CachePeer open(long capacityBytes) {
            return switch (this) {
                case SPANHEAP -> new Spanheap(capacityBytes);
                case OHC -> new Ohc(capacityBytes, false);
                case OHC_TINYLFU -> new Ohc(capacityBytes, true);
                case CAFFEINE_HEAP -> new CaffeineHeap(capacityBytes);
                case EHCACHE_OFFHEAP -> new Ehcache(capacityBytes);
                case NONE -> new Nothing();
            };
        }
    }

    final class Nothing implements CachePeer {
        @Override
        public byte[] get(long key) {
            return null;
        }

        @Override
        public void put(long key, byte[] value) {}

        @Override
        public long size() {
            return 0;
        }

        @Override
        public void close() {}
    }

    final class Spanheap implements CachePeer {
        private final OffHeapCache<Long, byte[]> cache;

        Spanheap(long capacity) {
            org.spanheap.CompactingHeap.Builder heap = OffHeapCache.defaultHeap();
            String tweak = System.getProperty("bench.heap", "");
            if (tweak.contains("heappace")) { // the heap's own defaults, before the cache's
                heap.compactionInterval(java.time.Duration.ofMillis(100)).movedBytesPerRound(256 << 10);
            }
            if (tweak.contains("owned")) {
                heap.threadOwnedPages(true);
            }
            if (tweak.contains("nobg")) {
                heap.backgroundCompaction(false);
            }
            if (tweak.contains("nokappa")) {
                heap.notFullPagesPerClass(org.spanheap.CompactingHeap.NOT_FULL_PAGES_UNBOUNDED);
            }
            java.util.regex.Matcher kappa = java.util.regex.Pattern.compile("kappa(\\d+)").matcher(tweak);
            if (kappa.find()) {
                heap.notFullPagesPerClass(Integer.parseInt(kappa.group(1)));
            }
            java.util.regex.Matcher lanes = java.util.regex.Pattern.compile("lanes(\\d+)").matcher(tweak);
            if (lanes.find()) {
                heap.allocationLanes(Integer.parseInt(lanes.group(1)));
            }
            if (tweak.contains("slow")) {
                heap.compactionInterval(java.time.Duration.ofSeconds(1));
            }
            if (tweak.contains("fast")) {
                heap.compactionInterval(java.time.Duration.ofMillis(10));
            }
            if (tweak.contains("eager")) {
                heap.compactionInterval(java.time.Duration.ZERO);
            }
            if (tweak.contains("batch256k")) {
                heap.reclaimBatchBytes(256 << 10);
            }
            if (tweak.contains("spanpages")) {
                heap.spanHeap(org.spanheap.SpanHeap.create()); // not closed: the benchmark JVM ends with it
            }
            if (tweak.contains("iota1m")) {
                heap.movedBytesPerRound(1 << 20);
            }
            OffHeapCache.Builder<Long, byte[]> builder = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                    .capacity(capacity).heap(heap);
            if (tweak.contains("ttl")) { // entries with deadlines of their own: what each write's slot check costs
                builder.variableExpiry();
            }
            cache = builder.build();
            if (tweak.contains("trace")) {
                traceEverySecond();
            }
        }

        /** Prints the heap's live and committed MiB and the MiB it moved, every second, to stderr. */
        private void traceEverySecond() {
            Thread t = new Thread(() -> {
                long t0 = System.nanoTime();
                long lastMoved = 0;
                try {
                    while (true) {
                        Thread.sleep(1000);
                        org.spanheap.cache.CacheStats s = cache.stats();
                        System.err.printf(java.util.Locale.ROOT, "trace %.1f s: live %d MiB, committed %d MiB,"
                                        + " moved %d MiB/s%n", (System.nanoTime() - t0) / 1e9, s.liveBytes() >> 20,
                                s.committedBytes() >> 20, (s.movedBytes() - lastMoved) >> 20);
                        lastMoved = s.movedBytes();
                    }
                } catch (InterruptedException | IllegalStateException e) {
                    // the cache closed: the run is over
                }
            }, "cache-trace");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public byte[] get(long key) {
            return cache.get(key);
        }

        @Override
        public void put(long key, byte[] value) {
            cache.put(key, value);
        }

        @Override
        public long size() {
            return cache.size();
        }

        @Override
        public String memory() {
            org.spanheap.cache.CacheStats s = cache.stats();
            return String.format(java.util.Locale.ROOT, "charged %d MiB, live %d MiB, committed %d MiB, moved %d MiB",
                    s.weightedBytes() >> 20, s.liveBytes() >> 20, s.committedBytes() >> 20, s.movedBytes() >> 20);
        }

        @Override
        public void close() {
            cache.close();
        }
    }

    final class Ohc implements CachePeer {
        private final OHCache<Long, byte[]> cache;

        Ohc(long capacity, boolean tinyLfu) {
            OHCacheBuilder<Long, byte[]> b = OHCacheBuilder.<Long, byte[]>newBuilder()
                    .keySerializer(new CacheSerializer<>() {
                        @Override
                        public void serialize(Long value, ByteBuffer buf) {
                            buf.putLong(value);
                        }

                        @Override
                        public Long deserialize(ByteBuffer buf) {
                            return buf.getLong();
                        }

                        @Override
                        public int serializedSize(Long value) {
                            return Long.BYTES;
                        }
                    })
                    .valueSerializer(new CacheSerializer<>() {
                        @Override
                        public void serialize(byte[] value, ByteBuffer buf) {
                            buf.put(value);
                        }

                        @Override
                        public byte[] deserialize(ByteBuffer buf) {
                            byte[] v = new byte[buf.remaining()];
                            buf.get(v);
                            return v;
                        }

                        @Override
                        public int serializedSize(byte[] value) {
                            return value.length;
                        }
                    })
                    .capacity(capacity);
            if (tinyLfu) {
                b.eviction(org.caffinitas.ohc.Eviction.W_TINY_LFU);
            }
            cache = b.build();
        }

        @Override
        public byte[] get(long key) {
            return cache.get(key);
        }

        @Override
        public void put(long key, byte[] value) {
            cache.put(key, value);
        }

        @Override
        public long size() {
            return cache.size();
        }

        @Override
        public void close() {
            try {
                cache.close();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    final class CaffeineHeap implements CachePeer {
        /** Caffeine's node, map entry and table slot per entry, measured (500,000 entries, JDK 25). */
        static final int ENTRY_BYTES = 91;
        private final Cache<Long, byte[]> cache;

        CaffeineHeap(long capacity) {
            cache = Caffeine.newBuilder().maximumWeight(capacity)
                    .weigher((Long k, byte[] v) -> ENTRY_BYTES + 24 + ((16 + v.length + 7) & ~7))
                    .build();
        }

        @Override
        public byte[] get(long key) {
            return cache.getIfPresent(key);
        }

        @Override
        public void put(long key, byte[] value) {
            cache.put(key, value);
        }

        @Override
        public long size() {
            return cache.estimatedSize();
        }

        @Override
        public void close() {
            cache.invalidateAll();
        }
    }

    final class Ehcache implements CachePeer {
        private final CacheManager manager;
        private final org.ehcache.Cache<Long, byte[]> cache;

        Ehcache(long capacity) {
            manager = CacheManagerBuilder.newCacheManagerBuilder().build(true);
            cache = manager.createCache("bench", CacheConfigurationBuilder.newCacheConfigurationBuilder(Long.class,
                    byte[].class, ResourcePoolsBuilder.newResourcePoolsBuilder()
                            .offheap(Math.max(1, capacity >> 20), MemoryUnit.MB)).build());
        }

        @Override
        public byte[] get(long key) {
            return cache.get(key);
        }

        @Override
        public void put(long key, byte[] value) {
            cache.put(key, value);
        }

        @Override
        public long size() {
            long n = 0;
            for (var ignored : cache) {
                n++;
            }
            return n;
        }

        @Override
        public void close() {
            manager.close();
        }
    }
}
