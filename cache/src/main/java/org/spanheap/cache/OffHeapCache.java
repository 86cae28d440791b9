package org.spanheap.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.StaleHandleException;

/**
 * A bounded cache whose values live off the Java heap, in a
 * {@link CompactingHeap} of its own, so that the memory they take stays close to
 * what they need whatever mix of sizes comes and goes.
 *
 * <p>The index and the eviction policy are Caffeine's (W-TinyLFU: a frequency
 * sketch guards admission to a main region behind a small window): the index
 * maps each key to its value's handle, and every entry that leaves it frees its
 * handle. Keys are equal when their serialized bytes are equal.
 *
 * <p><b>What the capacity bounds.</b> Everything an entry costs, off and on
 * the Java heap: its value's off-heap footprint
 * ({@link CompactingHeap#footprint(long)}: the value rounded up to its size
 * class), its key as the index holds it on the Java heap, and
 * {@value #ENTRY_OVERHEAD} bytes for its index entry. The sum over all entries
 * stays within the capacity (once each operation's eviction has run). A value
 * too large to fit at all is refused with an {@link IllegalArgumentException}.
 *
 * <p><b>Threads.</b> All methods are thread-safe. Eviction, expiry and removal
 * notifications run on the calling threads, after the operation that caused
 * them. Reads are lock-free and see a value whole even while compaction moves
 * it; a value replaced or removed during a read is either read whole as it was
 * or the lookup is retried.
 *
 * {@snippet :
 * try (OffHeapCache<String, byte[]> cache = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
 *         .capacity(256L << 20)
 *         .expireAfterWrite(Duration.ofMinutes(10))
 *         .build()) {
 *     cache.put("k", new byte[] {1, 2, 3});
 *     byte[] v = cache.get("k");
 *     long first = cache.get("k", segment -> segment.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
 * }
 * }
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class OffHeapCache<K, V> implements AutoCloseable {

    /**
     * Bytes charged per entry for what it takes on the Java heap besides its key:
     * the index's node, the handle-table entry and the handle's holder (measured
     * with 500,000 entries; see docs/cache.md).
     */
    public static final int ENTRY_OVERHEAD = 160;

    /** The largest value: an entry's charge must fit an {@code int}. */
    public static final long MAX_VALUE_SIZE = Integer.MAX_VALUE - (1L << 20);

    /** How often a lookup retries when its entry is replaced between the index and the read. */
    private static final int LOOKUP_ATTEMPTS = 4;

    private final CompactingHeap heap;
    private final Cache<Object, StoredValue> index;
    private final IndexKeys<K> keys;
    private final Serializer<V> values;
    private final Function<MemorySegment, V> readValue;
    private final RemovalListener<? super K, ? super V> listener;
    private final long capacity;
    /**
     * Expirations; evictions for size are Caffeine's eviction count less these (Caffeine
     * counts both as evictions). Counting size evictions here too cost an atomic addition
     * on every put that evicts: docs/cache.md.
     */
    private final LongAdder expirations = new LongAdder();
    private final String name;
    private final CacheMXBeanAdapter mxBean;
    private volatile boolean closed;

    private OffHeapCache(Builder<K, V> b) {
        this.heap = b.heapBuilder.build();
        this.keys = IndexKeys.of(b.keySerializer);
        this.values = b.valueSerializer;
        this.readValue = values::read;
        this.listener = b.listener;
        this.capacity = b.capacity;
        Caffeine<Object, Object> caffeine = Caffeine.newBuilder()
                .maximumWeight(b.capacity)
                .executor(Runnable::run)
                .recordStats();
        if (b.expireAfterWrite != null) {
            caffeine.expireAfterWrite(b.expireAfterWrite);
        }
        if (b.expireAfterAccess != null) {
            caffeine.expireAfterAccess(b.expireAfterAccess);
        }
        if (b.ticker != null) {
            Ticker t = b.ticker;
            caffeine.ticker(t::read);
        }
        this.index = caffeine
                .<Object, StoredValue>weigher((k, v) -> v.weight())
                .<Object, StoredValue>removalListener((k, v, cause) -> onRemoval(k, v, cause))
                .build();
        this.name = b.name != null ? b.name : "cache-" + Integer.toHexString(System.identityHashCode(this));
        this.mxBean = b.name != null ? registerOrClose(b.name) : null;
        CacheStatisticsEvent.opened(this);
    }

    private CacheMXBeanAdapter registerOrClose(String name) {
        try {
            return CacheMXBeanAdapter.register(this, name);
        } catch (RuntimeException e) {
            heap.close();
            throw e;
        }
    }

    /**
     * {@return a builder of a cache with these serializers}
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param keySerializer writes keys; keys with equal bytes are one key
     * @param valueSerializer writes and reads values
     * @throws NullPointerException if either is null
     */
    public static <K, V> Builder<K, V> builder(Serializer<K> keySerializer, Serializer<V> valueSerializer) {
        return new Builder<>(Objects.requireNonNull(keySerializer, "keySerializer"),
                Objects.requireNonNull(valueSerializer, "valueSerializer"));
    }

    /**
     * {@return the value stored for {@code key}, or null if there is none}
     *
     * @param key the key
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalStateException if the cache is closed
     */
    public V get(K key) {
        return get(key, readValue);
    }

    /**
     * Runs {@code reader} on the bytes of {@code key}'s value, in place, and
     * returns its result; returns null, without calling it, if there is no value.
     * The segment is valid only during the call (copy what you keep), and it stays
     * valid while compaction runs: if the value moves meanwhile, {@code reader} is
     * run again on the value's new place, so it must not have side effects that
     * cannot be repeated.
     *
     * @param <R> the reader's result type
     * @param key the key
     * @param reader what to compute from the value's bytes
     * @return what {@code reader} returned, or null if there is no value
     * @throws NullPointerException if {@code key} or {@code reader} is null
     * @throws IllegalStateException if the cache is closed
     */
    public <R> R get(K key, Function<? super MemorySegment, ? extends R> reader) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(reader, "reader");
        checkOpen();
        Object k = keys.lookup(key);
        for (int attempt = 1; ; attempt++) {
            StoredValue v = index.getIfPresent(k);
            if (v == null) {
                return null;
            }
            try {
                return heap.read(v.handle(), reader);
            } catch (StaleHandleException e) {
                // removed or replaced between the lookup and the read: look again
                if (attempt == LOOKUP_ATTEMPTS) {
                    return null;
                }
            }
        }
    }

    /**
     * {@return whether a value is stored for {@code key}} It does not count as an access.
     *
     * @param key the key
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalStateException if the cache is closed
     */
    public boolean containsKey(K key) {
        Objects.requireNonNull(key, "key");
        checkOpen();
        return index.asMap().containsKey(keys.lookup(key));
    }

    /**
     * Stores {@code value} for {@code key}, replacing any value stored before.
     * If the serializer throws, it is rethrown and the cache is unchanged.
     *
     * @param key the key
     * @param value the value
     * @throws NullPointerException if {@code key} or {@code value} is null
     * @throws IllegalArgumentException if the entry could never fit the capacity
     * @throws IllegalStateException if the cache is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public void put(K key, V value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        checkOpen();
        Object k = keys.stored(key);
        index.put(k, store(k, value));
    }

    /**
     * Stores {@code value} for {@code key} unless a value is stored for it.
     *
     * @param key the key
     * @param value the value
     * @return true if the value was stored, false if one was there
     * @throws NullPointerException if {@code key} or {@code value} is null
     * @throws IllegalArgumentException if the entry could never fit the capacity
     * @throws IllegalStateException if the cache is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public boolean putIfAbsent(K key, V value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        checkOpen();
        Object k = keys.stored(key);
        if (index.asMap().containsKey(k)) {
            return false; // the usual case when present: no copy made
        }
        StoredValue fresh = store(k, value);
        if (index.asMap().putIfAbsent(k, fresh) != null) {
            heap.free(fresh.handle()); // never published
            return false;
        }
        return true;
    }

    /**
     * Returns the value stored for {@code key}; if there is none, computes it with
     * {@code loader}, stores it and returns it. Concurrent calls for one key run
     * the loader once. If the loader returns null nothing is stored and null is
     * returned; if it (or the serializer) throws, the exception propagates and
     * nothing is stored.
     *
     * @param key the key
     * @param loader computes the value of a key
     * @return the value, or null if the loader returned null
     * @throws NullPointerException if {@code key} or {@code loader} is null
     * @throws IllegalArgumentException if the loaded entry could never fit the capacity
     * @throws IllegalStateException if the cache is closed
     */
    public V computeIfAbsent(K key, Function<? super K, ? extends V> loader) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(loader, "loader");
        checkOpen();
        Object k = keys.stored(key);
        for (int attempt = 1; ; attempt++) {
            Object[] loaded = new Object[1];
            StoredValue v = index.get(k, ik -> {
                V value = loader.apply(key);
                if (value == null) {
                    return null;
                }
                loaded[0] = value;
                return store(ik, value);
            });
            if (v == null) {
                return null;
            }
            if (loaded[0] != null) {
                @SuppressWarnings("unchecked")
                V value = (V) loaded[0];
                return value;
            }
            try {
                return heap.read(v.handle(), readValue);
            } catch (StaleHandleException e) {
                if (attempt == LOOKUP_ATTEMPTS) {
                    throw new IllegalStateException("the entry of this key kept being replaced", e);
                }
            }
        }
    }

    /**
     * Removes the value stored for {@code key}, if any.
     *
     * @param key the key
     * @return true if a value was removed
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalStateException if the cache is closed
     */
    public boolean remove(K key) {
        Objects.requireNonNull(key, "key");
        checkOpen();
        return index.asMap().remove(keys.lookup(key)) != null;
    }

    /**
     * Removes every entry (the removal listener sees each, as {@link RemovalCause#EXPLICIT}).
     *
     * @throws IllegalStateException if the cache is closed
     */
    public void clear() {
        checkOpen();
        index.invalidateAll();
    }

    /**
     * Runs pending maintenance now: evictions and the removal of expired entries,
     * which otherwise happen as operations go by.
     *
     * @throws IllegalStateException if the cache is closed
     */
    public void cleanUp() {
        checkOpen();
        index.cleanUp();
    }

    /**
     * {@return the number of entries} Entries that expired but were not yet
     * cleaned up are counted.
     *
     * @throws IllegalStateException if the cache is closed
     */
    public long size() {
        checkOpen();
        return index.estimatedSize();
    }

    /** {@return the cache's name: the one given to {@link Builder#registerMXBean(String)}, or a generated one} */
    public String name() {
        return name;
    }

    /** {@return the capacity in bytes} */
    public long capacity() {
        return capacity;
    }

    /**
     * {@return the bytes an entry is charged, given its key's charge and its
     * value's size} It is what the capacity bounds: the value's off-heap
     * footprint, the key's charge and {@value #ENTRY_OVERHEAD} for the index entry.
     * A key is charged what the index holds on the Java heap: 16 bytes for a
     * {@code Long}, 40 plus its length for a {@code String} (with
     * {@link Serializers#utf8()}) or for any serialized key (its bytes).
     *
     * @param keyBytes the key's charge
     * @param valueBytes the value's serialized size
     * @throws IllegalArgumentException if either is negative or the value is over {@link #MAX_VALUE_SIZE}
     */
    public long charge(long keyBytes, long valueBytes) {
        if (keyBytes < 0 || valueBytes < 0 || valueBytes > MAX_VALUE_SIZE) {
            throw new IllegalArgumentException("sizes out of range: key " + keyBytes + ", value " + valueBytes);
        }
        return heap.footprint(valueBytes) + keyBytes + ENTRY_OVERHEAD;
    }

    /**
     * {@return the cache's counters and memory now}
     *
     * @throws IllegalStateException if the cache is closed
     */
    public CacheStats stats() {
        checkOpen();
        long expired = expirations.sum(); // before Caffeine's count, which is taken before the listener adds to ours
        com.github.benmanes.caffeine.cache.stats.CacheStats s = index.stats();
        CompactingHeapStats h = heap.stats();
        long weighted = index.policy().eviction().orElseThrow().weightedSize().orElse(0);
        return new CacheStats(s.hitCount(), s.missCount(), s.loadSuccessCount(), s.loadFailureCount(),
                Math.max(0, s.evictionCount() - expired), expired, index.estimatedSize(), weighted, capacity,
                h.liveBytes(), h.committedBytes(), h.movedBytes(), h.compactionIncrements());
    }

    /**
     * Drops every entry (without removal notifications) and gives all the
     * cache's off-heap memory back. Idempotent; any other call afterwards throws
     * {@link IllegalStateException}.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true; // from now on removals free silently
        CacheStatisticsEvent.closed(this);
        if (mxBean != null) {
            mxBean.unregister();
        }
        index.invalidateAll();
        index.cleanUp();
        heap.close();
    }

    // ---- internals --------------------------------------------------------

    /** Copies {@code value} into the heap and returns its index entry; nothing is left behind if it throws. */
    private StoredValue store(Object indexKey, V value) {
        long size = values.size(value);
        if (size < 0 || size > MAX_VALUE_SIZE) {
            throw new IllegalArgumentException("value serializer gave a size out of range [0, "
                    + MAX_VALUE_SIZE + "]: " + size);
        }
        long weight = heap.footprint(size) + keys.chargedBytes(indexKey) + ENTRY_OVERHEAD;
        if (weight > capacity) {
            throw new IllegalArgumentException("an entry with a value of " + size + " bytes is charged " + weight
                    + " bytes, more than the cache's capacity of " + capacity + " bytes");
        }
        long handle = heap.allocate(size, segment -> values.write(value, segment));
        return new StoredValue(handle, (int) weight);
    }

    private void onRemoval(Object indexKey, StoredValue v, com.github.benmanes.caffeine.cache.RemovalCause cause) {
        if (v == null) {
            return; // only for collected weak values, which this cache does not use
        }
        try {
            if (cause == com.github.benmanes.caffeine.cache.RemovalCause.EXPIRED) {
                expirations.increment();
            }
            if (listener != null && !closed) {
                notifyListener(indexKey, v, cause);
            }
        } finally {
            free(v.handle());
        }
    }

    private void free(long handle) {
        if (closed) {
            return; // closing: the heap's close frees everything at once
        }
        try {
            heap.free(handle);
        } catch (IllegalStateException e) {
            if (!closed) {
                throw e;
            } // else close() ran meanwhile and freed it
        }
    }

    private void notifyListener(Object indexKey, StoredValue v, com.github.benmanes.caffeine.cache.RemovalCause cause) {
        RemovalCause ours = switch (cause) {
            case EXPLICIT, COLLECTED -> RemovalCause.EXPLICIT;
            case REPLACED -> RemovalCause.REPLACED;
            case SIZE -> RemovalCause.SIZE;
            case EXPIRED -> RemovalCause.EXPIRED;
        };
        listener.onRemoval(keys.userKey(indexKey), heap.read(v.handle(), readValue), ours);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the cache is closed");
        }
    }

    /**
     * Builder of {@link OffHeapCache}s.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static final class Builder<K, V> {
        private final Serializer<K> keySerializer;
        private final Serializer<V> valueSerializer;
        private long capacity = -1;
        private Duration expireAfterWrite;
        private Duration expireAfterAccess;
        private Ticker ticker;
        private RemovalListener<? super K, ? super V> listener;
        /** Pages mapped one by one: see {@link #heap}. */
        private CompactingHeap.Builder heapBuilder = CompactingHeap.builder().mappedPages();
        private String name;

        private Builder(Serializer<K> keySerializer, Serializer<V> valueSerializer) {
            this.keySerializer = keySerializer;
            this.valueSerializer = valueSerializer;
        }

        /**
         * Sets the capacity: the most bytes the entries may be charged in all
         * (see {@link OffHeapCache#charge}). Required.
         *
         * @param bytes the capacity, positive
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is not positive
         */
        public Builder<K, V> capacity(long bytes) {
            if (bytes <= 0) {
                throw new IllegalArgumentException("capacity must be positive: " + bytes);
            }
            this.capacity = bytes;
            return this;
        }

        /**
         * Removes entries this long after they were stored.
         *
         * @param duration a positive duration
         * @return this builder
         * @throws IllegalArgumentException if {@code duration} is zero or negative
         */
        public Builder<K, V> expireAfterWrite(Duration duration) {
            this.expireAfterWrite = positive(duration, "expireAfterWrite");
            return this;
        }

        /**
         * Removes entries this long after they were last read or stored.
         *
         * @param duration a positive duration
         * @return this builder
         * @throws IllegalArgumentException if {@code duration} is zero or negative
         */
        public Builder<K, V> expireAfterAccess(Duration duration) {
            this.expireAfterAccess = positive(duration, "expireAfterAccess");
            return this;
        }

        /**
         * Sets the time source for expiry (default {@link Ticker#system()}).
         *
         * @param ticker the time source
         * @return this builder
         */
        public Builder<K, V> ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * Sets the listener told of entries that leave the cache.
         *
         * @param listener the listener
         * @return this builder
         */
        public Builder<K, V> removalListener(RemovalListener<? super K, ? super V> listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Sets how the cache's compacting heap is built (page size, compaction
         * pacing, where its pages come from). The cache builds and owns the heap,
         * and closes it on {@link OffHeapCache#close()}. The default is
         * {@code CompactingHeap.builder().mappedPages()}: under a cache's churn,
         * pages mapped one by one left the process 10-40% less resident memory
         * than pages from a span heap, at the same throughput (docs/cache.md).
         *
         * @param heapBuilder a configured heap builder
         * @return this builder
         */
        public Builder<K, V> heap(CompactingHeap.Builder heapBuilder) {
            this.heapBuilder = Objects.requireNonNull(heapBuilder, "heapBuilder");
            return this;
        }

        /**
         * Names the cache and registers an {@link OffHeapCacheMXBean} for it on the
         * platform MBean server as {@code org.spanheap:type=OffHeapCache,name="<name>"}
         * when it is built; {@link OffHeapCache#close()} unregisters it. The name also
         * labels the cache's JFR event {@code org.spanheap.CacheStatistics}.
         *
         * @param name the cache's name, unique among registered caches
         * @return this builder
         */
        public Builder<K, V> registerMXBean(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * {@return a new cache}
         *
         * @throws IllegalStateException if no capacity was set
         * @throws IllegalArgumentException if the MXBean name is taken
         */
        public OffHeapCache<K, V> build() {
            if (capacity < 0) {
                throw new IllegalStateException("capacity(bytes) is required");
            }
            return new OffHeapCache<>(this);
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive: " + d);
            }
            return d;
        }
    }
}
