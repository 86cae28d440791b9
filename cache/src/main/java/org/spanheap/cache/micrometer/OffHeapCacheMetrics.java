package org.spanheap.cache.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.cache.CacheMeterBinder;
import java.util.Objects;
import java.util.function.ToLongFunction;
import org.spanheap.cache.CacheStats;
import org.spanheap.cache.OffHeapCache;

/**
 * Binds an {@link OffHeapCache}'s statistics to a Micrometer {@link MeterRegistry}, under the
 * meter names of Micrometer's own cache binders ({@code CaffeineCacheMetrics} and the other
 * {@link CacheMeterBinder}s), so that dashboards made for those show this cache too.
 *
 * <p>Meters, each tagged {@code cache=<name>} and with the tags given:
 * <ul>
 * <li>{@code cache.gets{result=hit|miss}}: lookups that found a value or found none, one per
 *     call ({@link CacheStats#hits()}, {@link CacheStats#misses()});</li>
 * <li>{@code cache.puts}: values stored ({@link CacheStats#puts()});</li>
 * <li>{@code cache.evictions}: entries that left because the capacity or their time ran out,
 *     as Caffeine counts evictions ({@link CacheStats#evictions()} plus
 *     {@link CacheStats#expirations()});</li>
 * <li>{@code cache.evictions.by.cause{cause=size|expired}}: the same, one counter per cause;</li>
 * <li>{@code cache.size}: entries;</li>
 * <li>{@code cache.load{result=success|failure}}: loader calls that stored a value, and
 *     those that threw or returned null, as in {@code CaffeineCacheMetrics};</li>
 * <li>{@code cache.charged} and {@code cache.capacity} (bytes): what the entries are
 *     charged against the capacity, and the capacity;</li>
 * <li>{@code cache.offheap.live} and {@code cache.offheap.committed} (bytes): the values'
 *     bytes and the off-heap memory the cache's heap holds.</li>
 * </ul>
 *
 * <p>The binder holds the cache weakly, as every {@link CacheMeterBinder} does. Once the
 * cache is closed its counters keep the last values they read and its gauges read NaN.
 *
 * {@snippet :
 * OffHeapCacheMetrics.monitor(registry, cache, "tier", "edge");
 * }
 *
 * @implNote Each meter's read takes a {@link OffHeapCache#stats()} snapshot, which visits
 *     every segment of the index under its lock: a scrape of the {@value #METERS} meters
 *     costs {@value #METERS} snapshots. Resident bytes are left out: asking the OS for them
 *     costs milliseconds per hundred MiB ({@link OffHeapCache#residentBytes()}).
 */
public final class OffHeapCacheMetrics extends CacheMeterBinder<OffHeapCache<?, ?>> {

    /** Meters a bind registers. */
    static final int METERS = 13;

    /** The last snapshot read while the cache was open: what the counters show once it is closed. */
    private volatile CacheStats last;

    /**
     * Creates a binder of {@code cache}'s meters, tagged {@code cache=<name>} and with {@code tags}.
     *
     * @param cache the cache
     * @param cacheName the value of the {@code cache} tag (often {@link OffHeapCache#name()})
     * @param tags more tags for every meter
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the cache is closed
     */
    public OffHeapCacheMetrics(OffHeapCache<?, ?> cache, String cacheName, Iterable<Tag> tags) {
        super(Objects.requireNonNull(cache, "cache"), Objects.requireNonNull(cacheName, "cacheName"),
                Objects.requireNonNull(tags, "tags"));
        this.last = cache.stats();
    }

    /**
     * Binds {@code cache}'s meters to {@code registry}, tagged {@code cache=}{@link OffHeapCache#name()}
     * and with {@code tags}.
     *
     * @param <C> the cache's type
     * @param registry where the meters go
     * @param cache the cache
     * @param tags more tags, as key-value pairs
     * @return the cache
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code tags} has an odd number of elements
     * @throws IllegalStateException if the cache is closed
     */
    public static <C extends OffHeapCache<?, ?>> C monitor(MeterRegistry registry, C cache, String... tags) {
        return monitor(registry, cache, Tags.of(tags));
    }

    /**
     * Binds {@code cache}'s meters to {@code registry}, tagged {@code cache=}{@link OffHeapCache#name()}
     * and with {@code tags}.
     *
     * @param <C> the cache's type
     * @param registry where the meters go
     * @param cache the cache
     * @param tags more tags
     * @return the cache
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the cache is closed
     */
    public static <C extends OffHeapCache<?, ?>> C monitor(MeterRegistry registry, C cache, Iterable<Tag> tags) {
        Objects.requireNonNull(registry, "registry");
        new OffHeapCacheMetrics(cache, cache.name(), tags).bindTo(registry);
        return cache;
    }

    /** {@return the cache's statistics now, or the last ones read if it is closed or collected} */
    private CacheStats stats() {
        OffHeapCache<?, ?> cache = getCache();
        if (cache != null) {
            try {
                CacheStats s = cache.stats();
                last = s;
                return s;
            } catch (IllegalStateException closed) {
                // closed: the counters keep the values they last read
            }
        }
        return null;
    }

    private long counter(ToLongFunction<CacheStats> value) {
        CacheStats s = stats();
        return value.applyAsLong(s != null ? s : last);
    }

    private double gauge(ToLongFunction<CacheStats> value) {
        CacheStats s = stats();
        return s != null ? value.applyAsLong(s) : Double.NaN;
    }

    @Override
    protected Long size() {
        CacheStats s = stats();
        return s != null ? s.entries() : null;
    }

    @Override
    protected long hitCount() {
        return counter(CacheStats::hits);
    }

    @Override
    protected Long missCount() {
        return counter(CacheStats::misses);
    }

    @Override
    protected Long evictionCount() {
        return counter(s -> s.evictions() + s.expirations());
    }

    @Override
    protected long putCount() {
        return counter(CacheStats::puts);
    }

    @Override
    protected void bindImplementationSpecificMetrics(MeterRegistry registry) {
        Iterable<Tag> tags = getTagsWithCacheName();
        FunctionCounter.builder("cache.evictions.by.cause", this, b -> b.counter(CacheStats::evictions))
                .tags(tags).tag("cause", "size")
                .description("Entries evicted to keep the entries' charges within the capacity")
                .register(registry);
        FunctionCounter.builder("cache.evictions.by.cause", this, b -> b.counter(CacheStats::expirations))
                .tags(tags).tag("cause", "expired")
                .description("Entries removed because their time to live or idle time ran out")
                .register(registry);
        FunctionCounter.builder("cache.load", this, b -> b.counter(CacheStats::loads))
                .tags(tags).tag("result", "success")
                .description("Loader calls that stored a value")
                .register(registry);
        FunctionCounter.builder("cache.load", this, b -> b.counter(CacheStats::loadFailures))
                .tags(tags).tag("result", "failure")
                .description("Loader calls that threw or returned null")
                .register(registry);
        bytes(registry, "cache.charged", CacheStats::weightedBytes,
                "What the entries are charged against the capacity: values, keys and index entries");
        bytes(registry, "cache.capacity", CacheStats::capacityBytes, "The most bytes the entries may be charged");
        bytes(registry, "cache.offheap.live", CacheStats::liveBytes, "Bytes of the values stored off the Java heap");
        bytes(registry, "cache.offheap.committed", CacheStats::committedBytes,
                "Off-heap memory the cache's heap holds from the OS");
    }

    private void bytes(MeterRegistry registry, String name, ToLongFunction<CacheStats> value, String description) {
        Gauge.builder(name, this, b -> b.gauge(value)).tags(getTagsWithCacheName()).baseUnit(BaseUnits.BYTES)
                .description(description).register(registry);
    }
}
