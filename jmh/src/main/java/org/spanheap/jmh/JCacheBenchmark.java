package org.spanheap.jmh;

import com.github.benmanes.caffeine.jcache.configuration.CaffeineConfiguration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import javax.cache.Cache;
import javax.cache.CacheManager;
import javax.cache.Caching;
import javax.cache.spi.CachingProvider;
import org.ehcache.config.builders.CacheConfigurationBuilder;
import org.ehcache.config.builders.ResourcePoolsBuilder;
import org.ehcache.config.units.MemoryUnit;
import org.ehcache.jsr107.Eh107Configuration;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;
import org.spanheap.jcache.OffHeapConfiguration;
import org.spanheap.jcache.SpanheapCachingProvider;

/**
 * {@link CacheBenchmark}'s operation and workload rows, through the JCache API: what the
 * JCache layer costs spanheap-cache against its own API, and how spanheap's provider compares
 * with Caffeine's and Ehcache 3's, each bounded by the same bytes and storing by value (the
 * JCache default; {@code byte[]} values are copied in and out by every one of them).
 *
 * <ul>
 *   <li>{@code SPANHEAP_API}: {@link OffHeapCache} through its own API, as CacheBenchmark's SPANHEAP;</li>
 *   <li>{@code SPANHEAP_JCACHE}: the same cache through spanheap's JCache provider
 *       ({@link OffHeapConfiguration}, the built-in {@code Long} and {@code byte[]} serializers);</li>
 *   <li>{@code CAFFEINE_JCACHE}: Caffeine's provider, values on the Java heap, bounded by a weigher
 *       that counts what an entry takes there (as CacheBenchmark's CAFFEINE_HEAP);</li>
 *   <li>{@code EHCACHE_JCACHE}: Ehcache 3's provider over an off-heap tier only.</li>
 * </ul>
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar JCacheBenchmark -t 2}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 1, time = 4)
@Measurement(iterations = 2, time = 3)
@Fork(value = 1, jvmArgsPrepend = {"-Xmx2g", "--enable-native-access=ALL-UNNAMED"})
@State(Scope.Benchmark)
public class JCacheBenchmark {

    /** The caches compared. */
    public enum Kind {
        SPANHEAP_API, SPANHEAP_JCACHE, CAFFEINE_JCACHE, EHCACHE_JCACHE
    }

    @Param({"SPANHEAP_API", "SPANHEAP_JCACHE", "CAFFEINE_JCACHE", "EHCACHE_JCACHE"})
    public Kind peer;

    @Param({"0.9", "0.99"})
    public double zipf;

    @Param({"5", "50"})
    public int writePercent;

    @Param({"100", "100-8192"})
    public String values;

    @Param("64")
    public long capacityMiB;

    private OffHeapCache<Long, byte[]> api;
    private Cache<Long, byte[]> jcache;
    private CacheManager manager;
    private int[] sample;
    private CacheBenchmark.ValueSizes sizes;

    @Setup(Level.Trial)
    public void open() {
        sizes = CacheBenchmark.ValueSizes.of(values);
        sample = CacheBenchmark.ZipfSample.of(sizes.keys(), zipf);
        long capacity = capacityMiB << 20;
        switch (peer) {
            case SPANHEAP_API -> api = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                    .capacity(capacity).build();
            case SPANHEAP_JCACHE -> {
                manager = provider(SpanheapCachingProvider.class.getName()).getCacheManager();
                OffHeapConfiguration<Long, byte[]> config = new OffHeapConfiguration<Long, byte[]>()
                        .setCapacity(capacity).setSerializers(Serializers.longs(), Serializers.bytes());
                config.setTypes(Long.class, byte[].class);
                jcache = manager.createCache("bench", config);
            }
            case CAFFEINE_JCACHE -> {
                manager = provider("com.github.benmanes.caffeine.jcache.spi.CaffeineCachingProvider").getCacheManager();
                CaffeineConfiguration<Long, byte[]> config = new CaffeineConfiguration<>();
                config.setTypes(Long.class, byte[].class);
                config.setMaximumWeight(OptionalLong.of(capacity));
                config.setWeigherFactory(java.util.Optional.of(() -> (Long k, byte[] v) ->
                        CachePeer.CaffeineHeap.ENTRY_BYTES + 24 + ((16 + v.length + 7) & ~7)));
                jcache = manager.createCache("bench", config);
            }
            case EHCACHE_JCACHE -> {
                manager = provider("org.ehcache.jsr107.EhcacheCachingProvider").getCacheManager();
                jcache = manager.createCache("bench", Eh107Configuration.fromEhcacheCacheConfiguration(
                        CacheConfigurationBuilder.newCacheConfigurationBuilder(Long.class, byte[].class,
                                ResourcePoolsBuilder.newResourcePoolsBuilder()
                                        .offheap(Math.max(1, capacity >> 20), MemoryUnit.MB))));
            }
        }
    }

    private static CachingProvider provider(String className) {
        return Caching.getCachingProvider(className, JCacheBenchmark.class.getClassLoader());
    }

    @TearDown(Level.Trial)
    public void close() {
        if (api != null) {
            api.close();
        }
        if (manager != null) {
            manager.close();
        }
    }

    /** CacheBenchmark's operation: a Zipf key; a put of a fresh value, or a get and a put on a miss. */
    @Benchmark
    public byte[] op(CacheBenchmark.Counts c) {
        long key = CacheBenchmark.ZipfSample.key(sample[c.position++ & (sample.length - 1)]);
        boolean write = c.random.nextInt(100) < writePercent;
        if (api != null) {
            if (write) {
                api.put(key, sizes.fresh(key));
                return null;
            }
            byte[] v = api.get(key);
            count(c, v, key);
            return v;
        }
        if (write) {
            jcache.put(key, sizes.fresh(key));
            return null;
        }
        byte[] v = jcache.get(key);
        count(c, v, key);
        return v;
    }

    private void count(CacheBenchmark.Counts c, byte[] v, long key) {
        if (v == null) {
            c.misses++;
            if (api != null) {
                api.put(key, sizes.fresh(key));
            } else {
                jcache.put(key, sizes.fresh(key));
            }
        } else {
            c.hits++;
        }
    }
}
