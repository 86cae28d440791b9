package org.spanheap.cache;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongPredicate;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.StaleHandleException;

/**
 * A bounded cache whose values live off the Java heap, in a
 * {@link CompactingHeap} of its own, so that the memory they take stays close to
 * what they need whatever mix of sizes comes and goes.
 *
 * <p>The index maps each key to its value's handle and evicts with W-TinyLFU,
 * Caffeine's policy (a frequency sketch guards admission to a main region
 * behind a small window), in segments that each have a lock of their own and
 * keep their entries in arrays, not in an object per entry. Every entry that
 * leaves the index frees its handle. Keys are equal when their serialized
 * bytes are equal.
 *
 * <p><b>What the capacity bounds.</b> Everything an entry costs, off and on
 * the Java heap: its value's off-heap footprint
 * ({@link CompactingHeap#footprint(long)}: the value rounded up to its size
 * class), its key as the index holds it on the Java heap, and
 * {@value #ENTRY_OVERHEAD} bytes for its index entry ({@value #EXPIRY_OVERHEAD}
 * more for each kind of expiry that is on: after write, after access, per entry). The sum over all entries
 * stays within the capacity (once each operation's eviction has run). A value
 * too large to fit at all is refused with an {@link IllegalArgumentException}.
 *
 * <p><b>Threads.</b> All methods are thread-safe. Eviction, expiry and removal
 * notifications run on the calling threads, after the operation that caused
 * them. A lookup finds the handle without taking its segment's lock (it
 * checks a version the segment's writers advance, and takes the lock only if
 * a writer raced it); the value is read after, and is seen whole even while
 * compaction moves it; a value replaced or removed during a read is either
 * read whole as it was or the lookup is retried.
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
     * its slot in the index's arrays and hash table, its share of the frequency
     * sketch, and the heap's handle-table entry (measured at 55-63 bytes between
     * 100,000 and 1,000,000 entries, as the arrays grow; see docs/cache.md).
     */
    public static final int ENTRY_OVERHEAD = 66;

    /** Bytes charged per entry for each kind of expiry that is on: its time stamp or deadline (8 bytes) and the arrays' slack. */
    public static final int EXPIRY_OVERHEAD = 10;

    /** The largest value: an entry's charge, rounded as the index keeps it, must fit an {@code int}. */
    public static final long MAX_VALUE_SIZE = Integer.MAX_VALUE - (1L << 23);

    /** How often a lookup retries when its entry is replaced between the index and the read. */
    private static final int LOOKUP_ATTEMPTS = 4;

    private final CompactingHeap heap;
    private final CacheIndex index;
    private final IndexKeys<K> keys;
    private final Serializer<V> values;
    private final Function<MemorySegment, V> readValue;
    /**
     * Whether a value's block is zeroed before the serializer writes it: unless the
     * serializer is a built-in one, all of which write every byte of the size they give.
     */
    private final boolean zeroBlocks;
    private final RemovalListener<? super K, ? super V> listener;
    /** {@link #ENTRY_OVERHEAD}, plus {@link #EXPIRY_OVERHEAD} per kind of expiry that is on. */
    private final int entryOverhead;
    /** The time source, or null when nothing expires (then no clock is read). */
    private final Ticker ticker;
    /** Whether entries may carry a time to live of their own ({@link Builder#variableExpiry()}). */
    private final boolean deadlines;
    /** Loads in progress, one per key: other callers for the key wait for it. */
    private final ConcurrentHashMap<Object, Load> loading = new ConcurrentHashMap<>();
    /** Values stored: by a put, a putIfAbsent or replace that stored, a load. */
    private final LongAdder puts = new LongAdder();
    private final LongAdder loads = new LongAdder();
    private final LongAdder loadFailures = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder expirations = new LongAdder();
    private final String name;
    private final CacheMXBeanAdapter mxBean;
    private volatile boolean closed;

    private OffHeapCache(Builder<K, V> b) {
        this.heap = b.heapBuilder.build();
        this.keys = IndexKeys.of(b.keySerializer);
        this.values = b.valueSerializer;
        this.readValue = segment -> values.read(segment.asReadOnly());
        this.zeroBlocks = !Serializers.writesEveryByte(values);
        this.listener = b.listener;
        this.entryOverhead = ENTRY_OVERHEAD + (b.expireAfterWrite != null ? EXPIRY_OVERHEAD : 0)
                + (b.expireAfterAccess != null ? EXPIRY_OVERHEAD : 0) + (b.variableExpiry ? EXPIRY_OVERHEAD : 0);
        Expiry expiry = new Expiry(nanos(b.expireAfterWrite), nanos(b.expireAfterAccess), b.variableExpiry);
        this.deadlines = b.variableExpiry;
        this.ticker = !expiry.any() ? null : b.ticker != null ? b.ticker : Ticker.system();
        this.index = new CacheIndex(b.capacity, keys.longs(), expiry);
        this.name = b.name != null ? b.name : "cache-" + Integer.toHexString(System.identityHashCode(this));
        this.mxBean = b.name != null ? registerOrClose(b.name) : null;
        CacheStatisticsEvent.opened(this);
    }

    private static long nanos(Duration d) {
        return d == null ? 0 : saturatedNanos(d);
    }

    /** {@return {@code d} in nanoseconds, or {@link Long#MAX_VALUE} if it is longer than that (about 292 years)} */
    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
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
     * {@return a new builder of the heap a cache uses unless told otherwise}
     * Start from it to change one setting ({@link Builder#heap}). Pages are
     * mapped one by one: under a cache's churn that left the process 10-40%
     * less resident memory than pages from a span heap, at the same
     * throughput. Compaction passes run every 10 ms with rounds of 1 MiB,
     * not the heap's 100 ms and 256 KiB: a cache's evictions punch holes in
     * pages of every size class all the time, and at the slower pace the
     * process held 1.33-1.57 times the capacity at its peak when value sizes
     * shifted, 1.23-1.26 times at this one, with no loss of throughput
     * measured at 5% writes and a few percent at 50% (docs/cache.md).
     */
    public static CompactingHeap.Builder defaultHeap() {
        return CompactingHeap.builder().mappedPages().compactionInterval(COMPACTION_INTERVAL).movedBytesPerRound(COMPACTION_ROUND_BYTES);
    }

    private static final Duration COMPACTION_INTERVAL = Duration.ofMillis(10);
    private static final long COMPACTION_ROUND_BYTES = 1 << 20;

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
        return lookup(key, readValue);
    }

    /**
     * Runs {@code reader} on the bytes of {@code key}'s value, in place, and
     * returns its result; returns null, without calling it, if there is no value.
     * The segment is read-only: a write through it throws
     * {@link IllegalArgumentException} and leaves the value as it was. It is
     * valid only during the call (copy what you keep), and it stays
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
        Objects.requireNonNull(reader, "reader");
        return lookup(key, segment -> reader.apply(segment.asReadOnly()));
    }

    /**
     * A lookup as the statistics count it, once per call: {@return what {@code reader}
     * returned for {@code key}'s value (a hit), or null if there is none (a miss)}
     * {@code reader} is given the value's segment as it is, writable.
     */
    @SuppressWarnings("unchecked")
    private <R> R lookup(K key, Function<? super MemorySegment, ? extends R> reader) {
        Objects.requireNonNull(key, "key");
        checkOpen();
        Object k = keys.lookup(key);
        Object found = find(k, CacheIndex.hash(k), reader);
        index.recordLookup(found != ABSENT);
        return found == ABSENT ? null : (R) found;
    }

    /** What {@link #find} returns when the key has no value. */
    private static final Object ABSENT = new Object();

    /**
     * {@return what {@code reader} returned for the value of {@code k}, or
     * {@link #ABSENT}} An access for the policy and for expiry, not counted in the
     * statistics: the caller counts its call once, however many tries it took.
     */
    private Object find(Object k, int hash, Function<? super MemorySegment, ?> reader) {
        for (int attempt = 1; ; attempt++) {
            long handle = index.lookup(k, hash, now());
            if (handle == 0) {
                return ABSENT;
            }
            try {
                return heap.read(handle, reader);
            } catch (StaleHandleException e) {
                // removed or replaced between the lookup and the read: look again
                if (attempt == LOOKUP_ATTEMPTS) {
                    return ABSENT;
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
        Object k = keys.lookup(key);
        return index.contains(k, CacheIndex.hash(k), now());
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
        put(key, value, Expiry.FOREVER_NANOS);
    }

    /**
     * Stores {@code value} for {@code key} to live {@code timeToLive} from now
     * (or less, if the cache's own expiry after write or after access comes
     * first), replacing any value stored before. Once that time has passed, a
     * lookup of the key misses; the entry itself leaves as writes go by (each
     * write checks a few entries of its segment), when the policy evicts it, or
     * at {@link #cleanUp()}, and until then it counts against the capacity. A
     * {@link #put(Object, Object)} of the key later stores a value without a
     * time to live of its own. If the serializer throws, it is rethrown and the
     * cache is unchanged.
     *
     * @param key the key
     * @param value the value
     * @param timeToLive how long the value is kept at most, positive
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code timeToLive} is zero or negative,
     *         or if the entry could never fit the capacity
     * @throws IllegalStateException if the cache was built without
     *         {@link Builder#variableExpiry()}, or is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public void put(K key, V value, Duration timeToLive) {
        put(key, value, timeToLiveNanos(timeToLive));
    }

    private void put(K key, V value, long ttlNanos) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        checkOpen();
        Object k = keys.stored(key);
        long size = sizeOf(value);
        int charge = chargeOf(k, size);
        long handle = store(value, size);
        Removals out = removals();
        try {
            long now = now();
            index.put(k, CacheIndex.hash(k), handle, charge, now, Expiry.deadline(now, ttlNanos), false, out);
            puts.increment();
        } finally {
            release(out);
        }
    }

    /** Checks a time to live given for one entry: {@return it in nanoseconds} */
    private long timeToLiveNanos(Duration timeToLive) {
        Objects.requireNonNull(timeToLive, "timeToLive");
        if (timeToLive.isNegative() || timeToLive.isZero()) {
            throw new IllegalArgumentException("timeToLive must be positive: " + timeToLive);
        }
        if (!deadlines) {
            throw new IllegalStateException("a time to live per entry needs a cache built with variableExpiry()");
        }
        return saturatedNanos(timeToLive);
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
        return putIfAbsent(key, value, Expiry.FOREVER_NANOS);
    }

    /**
     * Stores {@code value} for {@code key} to live {@code timeToLive} from now,
     * unless a value is stored for it (whose time to live is then left as it is);
     * see {@link #put(Object, Object, Duration)}.
     *
     * @param key the key
     * @param value the value
     * @param timeToLive how long the value is kept at most, positive
     * @return true if the value was stored, false if one was there
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code timeToLive} is zero or negative,
     *         or if the entry could never fit the capacity
     * @throws IllegalStateException if the cache was built without
     *         {@link Builder#variableExpiry()}, or is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public boolean putIfAbsent(K key, V value, Duration timeToLive) {
        return putIfAbsent(key, value, timeToLiveNanos(timeToLive));
    }

    private boolean putIfAbsent(K key, V value, long ttlNanos) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        checkOpen();
        Object k = keys.stored(key);
        int hash = CacheIndex.hash(k);
        if (index.contains(k, hash, now())) {
            return false; // the usual case when present: no copy made
        }
        long size = sizeOf(value);
        int charge = chargeOf(k, size);
        long handle = store(value, size);
        Removals out = removals();
        try {
            long now = now();
            if (index.put(k, hash, handle, charge, now, Expiry.deadline(now, ttlNanos), true, out) != 0) {
                heap.free(handle); // never published
                return false;
            }
            puts.increment();
            return true;
        } finally {
            release(out);
        }
    }

    /**
     * Replaces the value stored for {@code key} by {@code newValue} if the stored
     * value is {@code expectedValue}: if its bytes are those the value serializer
     * writes for {@code expectedValue} (OHC's {@code addOrReplace}). The test and
     * the store are one step for the key: no other write of it comes between them,
     * so concurrent read-modify-write loops lose no update. The replaced value is
     * reported to the removal listener as {@link RemovalCause#REPLACED}, and the
     * new one has no time to live of its own, as after {@link #put(Object, Object)}.
     * It is not a lookup for the statistics. The expected value is serialized into
     * a byte array on the Java heap for the comparison. If a serializer throws, it
     * is rethrown and the cache is unchanged.
     *
     * @param key the key
     * @param expectedValue the value that must be stored
     * @param newValue the value to store instead
     * @return true if {@code newValue} replaced {@code expectedValue}; false if the
     *         key has no value, or another one
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the new entry could never fit the capacity,
     *         or the expected value is larger than a Java array can hold
     * @throws IllegalStateException if the cache is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public boolean replace(K key, V expectedValue, V newValue) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(expectedValue, "expectedValue");
        Objects.requireNonNull(newValue, "newValue");
        checkOpen();
        Object k = keys.stored(key);
        MemorySegment expected = serializedOnHeap(expectedValue);
        long size = sizeOf(newValue);
        int charge = chargeOf(k, size);
        long handle = store(newValue, size);
        Removals out = removals();
        boolean stored = false;
        try {
            long now = now();
            LongPredicate holdsExpected = current -> heap.read(current, value -> value.mismatch(expected) < 0);
            stored = index.replaceIf(k, CacheIndex.hash(k), holdsExpected, handle, charge, now,
                    Expiry.deadline(now, Expiry.FOREVER_NANOS), out);
            if (stored) {
                puts.increment();
            }
        } finally {
            if (!stored) {
                heap.free(handle); // never published
            }
            release(out);
        }
        return stored;
    }

    /** {@return the bytes the value serializer writes for {@code value}, in a heap segment} */
    private MemorySegment serializedOnHeap(V value) {
        long size = sizeOf(value);
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a value of " + size + " bytes cannot be compared on the Java heap");
        }
        MemorySegment bytes = MemorySegment.ofArray(new byte[(int) size]);
        values.write(value, bytes);
        return bytes;
    }

    /**
     * Returns the value stored for {@code key}; if there is none, computes it with
     * {@code loader}, stores it and returns it. Concurrent calls for one key run
     * the loader once. If the loader returns null nothing is stored and null is
     * returned; if it (or the serializer) throws, the exception propagates and
     * nothing is stored. A loaded value has no time to live of its own. The
     * statistics count one lookup per call: a hit if the value was found in the
     * cache (also one another call loaded meanwhile), a miss if this call ran
     * the loader.
     *
     * @param key the key
     * @param loader computes the value of a key
     * @return the value, or null if the loader returned null
     * @throws NullPointerException if {@code key} or {@code loader} is null
     * @throws IllegalArgumentException if the loaded entry could never fit the capacity
     * @throws IllegalStateException if the cache is closed
     */
    @SuppressWarnings("unchecked")
    public V computeIfAbsent(K key, Function<? super K, ? extends V> loader) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(loader, "loader");
        checkOpen();
        Object k = keys.stored(key);
        int hash = CacheIndex.hash(k);
        for (;;) {
            Object found = find(k, hash, readValue);
            if (found != ABSENT) {
                index.recordLookup(true);
                return (V) found;
            }
            Load mine = new Load();
            Load other = loading.putIfAbsent(k, mine);
            if (other != null) {
                if (other.loader == Thread.currentThread()) {
                    throw new IllegalStateException("computeIfAbsent called again for the key it is loading");
                }
                other.join(); // then look again: it stored the value, or failed and we load
                continue;
            }
            Object loaded;
            try {
                loaded = load(key, k, hash, loader);
            } finally {
                loading.remove(k, mine);
                mine.complete(null);
            }
            if (loaded != ABSENT) {
                return (V) loaded;
            } // else stored between our lookup and our claim: look again
        }
    }

    /**
     * Runs {@code loader} for a key no one else is loading and stores what it returns
     * (a miss for the statistics): {@return the value loaded, null if the loader returned
     * null, or {@link #ABSENT} without running it if the key has a value now}
     */
    private Object load(K key, Object k, int hash, Function<? super K, ? extends V> loader) {
        if (index.contains(k, hash, now())) {
            return ABSENT;
        }
        index.recordLookup(false);
        V value;
        int charge;
        long handle;
        try {
            value = loader.apply(key);
            if (value == null) {
                loadFailures.increment();
                return null;
            }
            long size = sizeOf(value);
            charge = chargeOf(k, size);
            handle = store(value, size);
        } catch (RuntimeException | Error e) {
            loadFailures.increment();
            throw e;
        }
        Removals out = removals();
        try {
            long now = now();
            if (index.put(k, hash, handle, charge, now, Expiry.deadline(now, Expiry.FOREVER_NANOS), true, out) != 0) {
                heap.free(handle); // a put stored a value meanwhile: it stays, the caller gets what it loaded
            } else {
                puts.increment();
            }
            loads.increment();
            return value;
        } finally {
            release(out);
        }
    }

    /**
     * {@return the values stored for those of {@code keys} that have one, by key,
     * in the order of {@code keys}} Each is a lookup as {@link #get(Object)} makes
     * it (a hit or a miss in the stats); the map is a new one the caller owns.
     *
     * @param keys the keys
     * @throws NullPointerException if {@code keys} or one of them is null
     *         (checked before any lookup)
     * @throws IllegalStateException if the cache is closed
     */
    public Map<K, V> getAllPresent(Iterable<? extends K> keys) {
        List<K> wanted = nonNullKeys(keys);
        Map<K, V> found = new LinkedHashMap<>();
        for (K key : wanted) {
            V value = get(key);
            if (value != null) {
                found.put(key, value);
            }
        }
        return found;
    }

    /**
     * Stores every entry of {@code entries}, as {@link #put(Object, Object)}
     * does, one after the other: it is not atomic, and if one throws (a value
     * that could never fit, a serializer that throws) the entries before it stay
     * stored and the rest are not.
     *
     * @param entries the keys and values
     * @throws NullPointerException if {@code entries} or one of its keys or
     *         values is null (checked before anything is stored)
     * @throws IllegalArgumentException if an entry could never fit the capacity
     * @throws IllegalStateException if the cache is closed
     * @throws OutOfMemoryError if the heap cannot get memory from the OS
     */
    public void putAll(Map<? extends K, ? extends V> entries) {
        Objects.requireNonNull(entries, "entries");
        List<Map.Entry<? extends K, ? extends V>> all = new ArrayList<>(entries.size());
        for (Map.Entry<? extends K, ? extends V> e : entries.entrySet()) {
            Objects.requireNonNull(e.getKey(), "a key of entries");
            Objects.requireNonNull(e.getValue(), "a value of entries");
            all.add(e);
        }
        checkOpen();
        for (Map.Entry<? extends K, ? extends V> e : all) {
            put(e.getKey(), e.getValue());
        }
    }

    /**
     * Removes the values stored for {@code keys}, as {@link #remove(Object)} does
     * for each.
     *
     * @param keys the keys
     * @return how many were removed
     * @throws NullPointerException if {@code keys} or one of them is null
     *         (checked before anything is removed)
     * @throws IllegalStateException if the cache is closed
     */
    public int removeAll(Iterable<? extends K> keys) {
        int removed = 0;
        for (K key : nonNullKeys(keys)) {
            if (remove(key)) {
                removed++;
            }
        }
        return removed;
    }

    private List<K> nonNullKeys(Iterable<? extends K> keys) {
        Objects.requireNonNull(keys, "keys");
        List<K> all = new ArrayList<>();
        for (K key : keys) {
            all.add(Objects.requireNonNull(key, "a key of keys"));
        }
        checkOpen();
        return all;
    }

    /**
     * Runs {@code action} on the key of every entry whose value has not
     * expired. Weakly consistent, as a concurrent map's iteration: a key
     * stored throughout the call is seen exactly once; one stored or removed
     * during the call may or may not be. It is not an access (the policy and
     * expiry after access do not see it). The index is walked segment by
     * segment, each segment's keys copied under its lock, and the action runs
     * with no lock held, so it may use this cache (read, write, remove). For
     * snapshots of a cache's keys, for example to warm a new instance on the
     * next start. If the action throws, the walk stops and the exception
     * propagates; the cache is unchanged by the walk itself.
     *
     * @param action what to do with each key
     * @throws NullPointerException if {@code action} is null
     * @throws IllegalStateException if the cache is closed (also when it
     *         closes during the call, before the next segment)
     */
    public void forEachKey(Consumer<? super K> action) {
        Objects.requireNonNull(action, "action");
        checkOpen();
        index.forEachKey(() -> {
            checkOpen();
            return now();
        }, k -> action.accept(keys.userKey(k)));
    }

    /**
     * Returns the keys of the {@code n} entries the cache has seen used most
     * often lately, the most used first: what to save so that the next instance
     * can be warmed with the values that matter (OHC's {@code hotKeyIterator}).
     * The ranking is the eviction policy's own frequency estimate (a sketch of
     * 4-bit counters that halve as they age), so it is approximate: keys of
     * equal estimate come in no particular order, and each segment's sketch ages
     * on its own. Entries whose value has expired are left out. Weakly
     * consistent, as {@link #forEachKey}: each segment is read under its lock in
     * turn. It is not an access. Time and memory: one pass over the index and
     * {@code O(min(n, size()))} objects.
     *
     * @param n how many keys at most, at least 0
     * @return a new list of at most {@code n} keys
     * @throws IllegalArgumentException if {@code n} is negative
     * @throws IllegalStateException if the cache is closed (also when it
     *         closes during the call, before the next segment)
     */
    public List<K> hotKeys(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("n must be at least 0: " + n);
        }
        checkOpen();
        List<Object> indexKeys = index.hotKeys(() -> {
            checkOpen();
            return now();
        }, n);
        List<K> out = new ArrayList<>(indexKeys.size());
        for (Object k : indexKeys) {
            out.add(keys.userKey(k));
        }
        return out;
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
        Object k = keys.lookup(key);
        Removals out = removals();
        try {
            return index.remove(k, CacheIndex.hash(k), out);
        } finally {
            release(out);
        }
    }

    /**
     * Removes every entry (the removal listener sees each, as {@link RemovalCause#EXPLICIT}).
     *
     * @throws IllegalStateException if the cache is closed
     */
    public void clear() {
        checkOpen();
        Removals out = removals();
        try {
            index.removeAll(false, 0, out);
        } finally {
            release(out);
        }
    }

    /**
     * Runs pending maintenance now: evictions and the removal of expired entries,
     * which otherwise happen as operations go by.
     *
     * @throws IllegalStateException if the cache is closed
     */
    public void cleanUp() {
        checkOpen();
        Removals out = removals();
        try {
            index.removeAll(true, now(), out);
        } finally {
            release(out);
        }
    }

    /**
     * {@return the number of entries} Entries that expired but were not yet
     * cleaned up are counted.
     *
     * @throws IllegalStateException if the cache is closed
     */
    public long size() {
        checkOpen();
        return index.counts()[0];
    }

    /**
     * {@return the cache's name: the one given to {@link Builder#registerMXBean(String)}, or a generated one}
     *
     * @throws IllegalStateException if the cache is closed
     */
    public String name() {
        checkOpen();
        return name;
    }

    /**
     * {@return the capacity in bytes}
     *
     * @throws IllegalStateException if the cache is closed
     */
    public long capacity() {
        checkOpen();
        return index.capacity();
    }

    /**
     * Changes the capacity, as OHC's {@code setCapacity} and Caffeine's
     * {@code setMaximum} do: when it shrinks, entries are evicted at once (the
     * policy's choice, told to the removal listener as {@link RemovalCause#SIZE})
     * until the charges fit the new capacity. Writes that run meanwhile evict
     * down to whichever capacity they read; one that was checked against the old
     * capacity and alone exceeds the new one is evicted itself (the value it was
     * to replace leaves as replaced, as after any put). The index keeps
     * the number of segments the first capacity gave it.
     *
     * @param bytes the new capacity, positive
     * @throws IllegalArgumentException if {@code bytes} is not positive
     * @throws IllegalStateException if the cache is closed
     */
    public void setCapacity(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + bytes);
        }
        checkOpen();
        Removals out = removals();
        try {
            index.setCapacity(bytes, now(), out);
        } finally {
            release(out);
        }
    }

    /**
     * {@return the bytes an entry is charged, given its key's charge and its
     * value's size} It is what the capacity bounds: the value's off-heap
     * footprint, the key's charge and {@value #ENTRY_OVERHEAD} for the index entry
     * (plus {@value #EXPIRY_OVERHEAD} per kind of expiry that is on).
     * A key is charged what the index holds on the Java heap: 8 bytes for a
     * {@code Long} (kept as a {@code long} in the entry), 52 plus its length for a
     * {@code String} (with {@link Serializers#utf8()}) or for any serialized key (its
     * bytes, their objects, and the entry's reference to them and word for their hash).
     * A charge of 512 bytes or more is rounded up to nine significant bits (at most
     * 0.4% more), as the index keeps it.
     *
     * @param keyBytes the key's charge
     * @param valueBytes the value's serialized size
     * @throws IllegalArgumentException if either is negative or the value is over {@link #MAX_VALUE_SIZE}
     * @throws IllegalStateException if the cache is closed
     */
    public long charge(long keyBytes, long valueBytes) {
        if (keyBytes < 0 || valueBytes < 0 || valueBytes > MAX_VALUE_SIZE) {
            throw new IllegalArgumentException("sizes out of range: key " + keyBytes + ", value " + valueBytes);
        }
        checkOpen();
        return EntryCharge.round(heap.footprint(valueBytes) + keyBytes + entryOverhead);
    }

    /**
     * {@return the cache's counters and memory now}
     *
     * @throws IllegalStateException if the cache is closed
     */
    public CacheStats stats() {
        checkOpen();
        long[] counts = index.counts();
        CompactingHeapStats h = heap.stats();
        return new CacheStats(counts[1], counts[2], puts.sum(), loads.sum(), loadFailures.sum(), evictions.sum(),
                expirations.sum(), counts[0], index.charged(), index.capacity(), h.liveBytes(), h.committedBytes(),
                h.movedBytes(), h.compactionIncrements());
    }

    /**
     * {@return the bytes of the cache's off-heap memory that are in RAM now}, asked of the OS: at most {@link CacheStats#committedBytes()}, less where memory the heap
     * holds was never written (see {@link CompactingHeap#residentBytes()}, which this is, for
     * its cost: not part of {@link #stats()} for that reason).
     *
     * @throws IllegalStateException if the cache is closed
     */
    public long residentBytes() {
        checkOpen();
        return heap.residentBytes();
    }

    /**
     * Drops every entry (without removal notifications) and gives all the
     * cache's off-heap memory back. Idempotent; any other call afterwards throws
     * {@link IllegalStateException} (once its arguments passed their checks: a
     * null or out-of-range argument is reported as such, closed or not).
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
        heap.close(); // every value at once; the index is dropped with the cache
    }

    // ---- internals --------------------------------------------------------

    private long now() {
        return ticker == null ? 0 : ticker.read();
    }

    /**
     * Allocates {@code size} bytes and writes {@code value} into them: {@return the
     * new block's handle} The block is zeroed first, as arrays and
     * {@code Arena.allocate} are, so that bytes the serializer leaves unwritten are
     * zeros, never those of a value freed before (docs/cache.md, "Zeroed blocks");
     * not for a built-in serializer, which writes them all.
     */
    private long store(V value, long size) {
        if (!zeroBlocks) {
            return heap.allocate(size, segment -> values.write(value, segment));
        }
        return heap.allocate(size, segment -> {
            segment.fill((byte) 0);
            values.write(value, segment);
        });
    }

    /** {@return the serialized size of {@code value}, checked} */
    private long sizeOf(V value) {
        long size = values.size(value);
        if (size < 0 || size > MAX_VALUE_SIZE) {
            throw new IllegalArgumentException("value serializer gave a size out of range [0, "
                    + MAX_VALUE_SIZE + "]: " + size);
        }
        return size;
    }

    /** {@return what an entry of a value of {@code size} bytes is charged} Checks it against the capacity. */
    private int chargeOf(Object indexKey, long size) {
        long charge = EntryCharge.round(heap.footprint(size) + keys.chargedBytes(indexKey) + entryOverhead);
        long capacity = index.capacity();
        if (charge > capacity) {
            throw new IllegalArgumentException("an entry with a value of " + size + " bytes is charged " + charge
                    + " bytes, more than the cache's capacity of " + capacity + " bytes");
        }
        if (charge > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("an entry with a value of " + size + " bytes is charged " + charge
                    + " bytes, more than an entry may be (" + Integer.MAX_VALUE + ")");
        }
        return (int) charge;
    }

    /** {@return a list for the entries a call removes} Their keys only if a listener is told of them. */
    private Removals removals() {
        return new Removals(listener != null);
    }

    /** Counts, tells the listener of and frees the entries that left the index (its locks released). */
    private void release(Removals out) {
        for (int i = 0; i < out.size(); i++) {
            RemovalCause cause = out.cause(i);
            if (cause == RemovalCause.SIZE) {
                evictions.increment();
            } else if (cause == RemovalCause.EXPIRED) {
                expirations.increment();
            }
            try {
                if (listener != null && !closed) {
                    listener.onRemoval(keys.userKey(out.key(i)), heap.read(out.handle(i), readValue), cause);
                }
            } catch (RuntimeException e) {
                System.getLogger(OffHeapCache.class.getName()).log(System.Logger.Level.WARNING,
                        "the removal listener threw; the entry is removed all the same", e);
            } finally {
                free(out.handle(i));
            }
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

    /** A load in progress; other callers for its key wait for it to complete. */
    private static final class Load extends CompletableFuture<Void> {
        final Thread loader = Thread.currentThread();
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
        private boolean variableExpiry;
        private Ticker ticker;
        private RemovalListener<? super K, ? super V> listener;
        private CompactingHeap.Builder heapBuilder = defaultHeap();
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
         * Lets entries be given a time to live of their own, with
         * {@link OffHeapCache#put(Object, Object, Duration)} and
         * {@link OffHeapCache#putIfAbsent(Object, Object, Duration)}; entries
         * stored otherwise have none. Each entry is then charged
         * {@value OffHeapCache#EXPIRY_OVERHEAD} bytes more for its deadline.
         *
         * @return this builder
         */
        public Builder<K, V> variableExpiry() {
            this.variableExpiry = true;
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
         * {@link OffHeapCache#defaultHeap()}, which says why.
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
