package org.spanheap.jcache;

import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import javax.cache.management.CacheStatisticsMXBean;

/**
 * A JCache cache's statistics, as JSR-107 counts them: the JCache layer counts
 * hits, misses, puts and removals once per call and entry, and takes evictions
 * from the {@link org.spanheap.cache.OffHeapCache} below (minus those before the
 * last {@link #clear()}). Counted only while statistics are enabled. Times are
 * in microseconds, averaged over the calls counted.
 */
final class Statistics implements CacheStatisticsMXBean {
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder puts = new LongAdder();
    private final LongAdder removals = new LongAdder();
    private final LongAdder getNanos = new LongAdder();
    private final LongAdder putNanos = new LongAdder();
    private final LongAdder removeNanos = new LongAdder();
    private final LongSupplier evictionsBelow;
    private volatile long evictionsCleared;
    private volatile boolean enabled;

    Statistics(LongSupplier evictionsBelow) {
        this.evictionsBelow = evictionsBelow;
    }

    boolean enabled() {
        return enabled;
    }

    void enable(boolean on) {
        this.enabled = on;
    }

    /** {@return {@link System#nanoTime()} if statistics are on, else 0 (no clock read)} */
    long start() {
        return enabled ? System.nanoTime() : 0;
    }

    void hit(int n) {
        if (enabled) {
            hits.add(n);
        }
    }

    void miss(int n) {
        if (enabled) {
            misses.add(n);
        }
    }

    void put(int n) {
        if (enabled) {
            puts.add(n);
        }
    }

    void removal(int n) {
        if (enabled) {
            removals.add(n);
        }
    }

    void getTime(long start) {
        if (enabled && start != 0) {
            getNanos.add(System.nanoTime() - start);
        }
    }

    void putTime(long start) {
        if (enabled && start != 0) {
            putNanos.add(System.nanoTime() - start);
        }
    }

    void removeTime(long start) {
        if (enabled && start != 0) {
            removeNanos.add(System.nanoTime() - start);
        }
    }

    @Override
    public void clear() {
        hits.reset();
        misses.reset();
        puts.reset();
        removals.reset();
        getNanos.reset();
        putNanos.reset();
        removeNanos.reset();
        evictionsCleared = evictionsBelow.getAsLong();
    }

    @Override
    public long getCacheHits() {
        return hits.sum();
    }

    @Override
    public float getCacheHitPercentage() {
        long h = hits.sum();
        long total = h + misses.sum();
        return total == 0 ? 0 : 100f * h / total;
    }

    @Override
    public long getCacheMisses() {
        return misses.sum();
    }

    @Override
    public float getCacheMissPercentage() {
        long m = misses.sum();
        long total = m + hits.sum();
        return total == 0 ? 0 : 100f * m / total;
    }

    @Override
    public long getCacheGets() {
        return hits.sum() + misses.sum();
    }

    @Override
    public long getCachePuts() {
        return puts.sum();
    }

    @Override
    public long getCacheRemovals() {
        return removals.sum();
    }

    @Override
    public long getCacheEvictions() {
        return Math.max(0, evictionsBelow.getAsLong() - evictionsCleared);
    }

    @Override
    public float getAverageGetTime() {
        return average(getNanos.sum(), getCacheGets());
    }

    @Override
    public float getAveragePutTime() {
        return average(putNanos.sum(), getCachePuts());
    }

    @Override
    public float getAverageRemoveTime() {
        return average(removeNanos.sum(), getCacheRemovals());
    }

    private static float average(long nanos, long calls) {
        return calls == 0 ? 0 : nanos / 1000f / calls;
    }
}
