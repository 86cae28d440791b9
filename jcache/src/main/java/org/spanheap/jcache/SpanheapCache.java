package org.spanheap.jcache;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import javax.cache.Cache;
import javax.cache.CacheException;
import javax.cache.CacheManager;
import javax.cache.configuration.CacheEntryListenerConfiguration;
import javax.cache.configuration.CompleteConfiguration;
import javax.cache.configuration.Configuration;
import javax.cache.configuration.Factory;
import javax.cache.event.EventType;
import javax.cache.expiry.Duration;
import javax.cache.expiry.EternalExpiryPolicy;
import javax.cache.expiry.ExpiryPolicy;
import javax.cache.integration.CacheLoader;
import javax.cache.integration.CacheLoaderException;
import javax.cache.integration.CacheWriter;
import javax.cache.integration.CacheWriterException;
import javax.cache.integration.CompletionListener;
import javax.cache.management.CacheMXBean;
import javax.cache.management.CacheStatisticsMXBean;
import javax.cache.processor.EntryProcessor;
import javax.cache.processor.EntryProcessorException;
import javax.cache.processor.EntryProcessorResult;
import javax.management.ObjectName;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializer;
import org.spanheap.cache.Serializers;

/**
 * A JCache cache over an {@link OffHeapCache}: keys and values are stored as
 * their serialized bytes (store-by-value), each value with its expiry time.
 *
 * <p><b>Atomicity.</b> Every operation that writes, and every read that must
 * act on what it finds (an expired entry, an expiry after access, a
 * read-through), holds the lock of its key's stripe from its read to its
 * write, so that JCache's compound operations ({@code getAndPut},
 * {@code replace(k, old, new)}, {@code invoke}, ...) are atomic for the key.
 * A plain {@code get} of a cache whose entries never change expiry on access
 * takes no lock: it is the OffHeapCache's lock-free lookup plus a check of the
 * expiry time. Listeners are called after the lock is released.
 *
 * <p><b>Expiry.</b> The {@link ExpiryPolicy}'s durations are turned into a
 * wall-clock time kept in front of the value's bytes (left out when the policy
 * is eternal). An expired entry stays until an operation meets it (it then
 * reports it expired and removes it) or the OffHeapCache evicts it. An expiry
 * after access rewrites the entry (its bytes are immutable off-heap).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class SpanheapCache<K, V> implements Cache<K, V> {

    /** Stripes of key locks: enough that unrelated keys rarely share one under a few dozen threads. */
    private static final int STRIPES = 256;

    private final SpanheapCacheManager manager;
    private final String name;
    private final OffHeapConfiguration<K, V> config;
    private final Class<K> keyType;
    private final Class<V> valueType;
    private final OffHeapCache<K, StoredValue<V>> store;
    private final StoredValue.Codec<V> codec;
    /** Reads the value alone from an untimed entry's bytes; null when entries carry an expiry time. */
    private final java.util.function.Function<MemorySegment, V> readValue;
    /** The expiry policy, or null if it is eternal. */
    private final ExpiryPolicy expiry;
    private final CacheLoader<K, V> loader;
    private final CacheWriter<K, V> writer;
    private final EntryListeners<K, V> listeners = new EntryListeners<>();
    private final Statistics statistics;
    private final ConfigurationView configurationView;
    private final ObjectName statisticsName;
    private final ObjectName configurationName;
    private final ReentrantLock[] locks = new ReentrantLock[STRIPES];
    private volatile boolean closed;

    @SuppressWarnings("unchecked")
    SpanheapCache(SpanheapCacheManager manager, String name, OffHeapConfiguration<K, V> config) {
        this.manager = manager;
        this.name = name;
        this.config = config;
        this.keyType = config.getKeyType();
        this.valueType = config.getValueType();
        ClassLoader classLoader = manager.getClassLoader();

        Factory<ExpiryPolicy> expiryFactory = config.getExpiryPolicyFactory();
        ExpiryPolicy policy = expiryFactory == null ? null : expiryFactory.create();
        this.expiry = policy == null || policy instanceof EternalExpiryPolicy ? null : policy;
        this.loader = config.getCacheLoaderFactory() == null ? null : config.getCacheLoaderFactory().create();
        this.writer = config.getCacheWriterFactory() == null ? null
                : (CacheWriter<K, V>) config.getCacheWriterFactory().create();

        Serializer<K> keys = config.getKeySerializer() != null ? config.getKeySerializer()
                : (Serializer<K>) defaultSerializer(keyType, classLoader);
        Serializer<V> values = config.getValueSerializer() != null ? config.getValueSerializer()
                : (Serializer<V>) defaultSerializer(valueType, classLoader);
        if (keys != Serializers.utf8() && keys != Serializers.longs() && keys != Serializers.bytes()) {
            keys = new StoredValue.GuardedKeys<>(keys); // built-ins do not fail, and stay recognisable
        }
        this.codec = new StoredValue.Codec<>(values, expiry != null);
        this.readValue = expiry == null ? codec.valueReader() : null;
        OffHeapCache.Builder<K, StoredValue<V>> builder =
                OffHeapCache.builder(keys, codec).capacity(config.getCapacity());
        if (config.getHeap() != null) {
            builder.heap(config.getHeap());
        }
        this.store = builder.build();
        this.statistics = new Statistics(() -> closed ? 0 : store.stats().evictions());
        this.configurationView = new ConfigurationView(config);
        String uri = manager.getURI().toString();
        this.statisticsName = ManagementBeans.name("CacheStatistics", uri, name);
        this.configurationName = ManagementBeans.name("CacheConfiguration", uri, name);
        for (int i = 0; i < STRIPES; i++) {
            locks[i] = new ReentrantLock();
        }
        for (CacheEntryListenerConfiguration<K, V> listener : config.getCacheEntryListenerConfigurations()) {
            listeners.register(listener);
        }
        if (config.isStatisticsEnabled()) {
            enableStatistics(true);
        }
        if (config.isManagementEnabled()) {
            enableManagement(true);
        }
    }

    private static Serializer<?> defaultSerializer(Class<?> type, ClassLoader classLoader) {
        if (type == String.class) {
            return Serializers.utf8();
        }
        if (type == Long.class) {
            return Serializers.longs();
        }
        return new JavaSerializer<>(classLoader);
    }

    // ---------------------------------------------------------------- reads

    @Override
    public V get(K key) {
        checkOpen();
        checkKey(key);
        long start = statistics.start();
        if (expiry == null) {
            // eternal entries: the value alone is read, with no expiry time to check
            V found = store.get(key, readValue);
            if (found != null) {
                statistics.hit(1);
                statistics.getTime(start);
                return found;
            }
            if (loader == null || !config.isReadThrough()) {
                statistics.miss(1);
                statistics.getTime(start);
                return null;
            }
        }
        List<EntryEvent<K, V>> events = events();
        V value;
        ReentrantLock lock = lock(key);
        try {
            value = getLocked(key, events, config.isReadThrough());
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        listeners.dispatch(events);
        return value;
    }

    /** A get under the key's lock: hit (with expiry on access), or miss (with read-through if on). */
    private V getLocked(K key, List<EntryEvent<K, V>> events, boolean readThrough) {
        long now = now();
        StoredValue<V> current = live(key, now, events);
        if (current != null) {
            statistics.hit(1);
            touch(key, current, now);
            return current.value();
        }
        statistics.miss(1);
        if (!readThrough || loader == null) {
            return null;
        }
        V loaded = load(key);
        if (loaded != null) {
            create(key, loaded, now, events, false);
        }
        return loaded;
    }

    @Override
    public Map<K, V> getAll(Set<? extends K> keys) {
        checkOpen();
        checkKeys(keys);
        long start = statistics.start();
        Map<K, V> found = new LinkedHashMap<>();
        List<EntryEvent<K, V>> events = events();
        Set<K> missing = new LinkedHashSet<>();
        for (K key : keys) {
            ReentrantLock lock = lock(key);
            try {
                V value = getLocked(key, events, false);
                if (value != null) {
                    found.put(key, value);
                } else {
                    missing.add(key);
                }
            } finally {
                lock.unlock();
            }
        }
        if (config.isReadThrough() && loader != null && !missing.isEmpty()) {
            Map<K, V> loaded = loadAll(missing);
            long now = now();
            for (Map.Entry<K, V> e : loaded.entrySet()) {
                if (e.getKey() == null || e.getValue() == null) {
                    continue;
                }
                ReentrantLock lock = lock(e.getKey());
                try {
                    if (live(e.getKey(), now, events) == null) {
                        create(e.getKey(), e.getValue(), now, events, false);
                    }
                } finally {
                    lock.unlock();
                }
                found.put(e.getKey(), e.getValue());
            }
        }
        statistics.getTime(start);
        listeners.dispatch(events);
        return found;
    }

    @Override
    public boolean containsKey(K key) {
        checkOpen();
        checkKey(key);
        StoredValue<V> found = store.get(key);
        return found != null && !found.expiredAt(now());
    }

    @Override
    public void loadAll(Set<? extends K> keys, boolean replaceExistingValues, CompletionListener completionListener) {
        checkOpen();
        checkKeys(keys);
        if (loader == null) {
            if (completionListener != null) {
                completionListener.onCompletion();
            }
            return;
        }
        Set<K> wanted = new LinkedHashSet<>(keys);
        ForkJoinPool.commonPool().execute(() -> {
            try {
                Set<K> toLoad = new LinkedHashSet<>();
                for (K key : wanted) {
                    if (replaceExistingValues || !containsKey(key)) {
                        toLoad.add(key);
                    }
                }
                Map<K, V> loaded = toLoad.isEmpty() ? Map.of() : loadAll(toLoad);
                List<EntryEvent<K, V>> events = events();
                for (Map.Entry<K, V> e : loaded.entrySet()) {
                    if (e.getKey() != null && e.getValue() != null) {
                        putLocked(e.getKey(), e.getValue(), replaceExistingValues, false, events);
                    }
                }
                listeners.dispatch(events);
                if (completionListener != null) {
                    completionListener.onCompletion();
                }
            } catch (Exception e) {
                if (completionListener != null) {
                    completionListener.onException(e instanceof CacheLoaderException ? e
                            : new CacheLoaderException("loading failed: " + e, e));
                }
            }
        });
    }

    // ---------------------------------------------------------------- writes

    @Override
    public void put(K key, V value) {
        checkOpen();
        checkKey(key);
        checkValue(value);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        if (events == null && expiry == null && (writer == null || !config.isWriteThrough())) {
            // nothing needs the value it replaces (no event, no expiry to carry over, no writer):
            // store without reading the old one back, under the key's lock as every write
            ReentrantLock lock = lock(key);
            try {
                store.put(key, new StoredValue<>(value, StoredValue.ETERNAL));
            } finally {
                lock.unlock();
            }
            statistics.put(1);
            statistics.putTime(start);
            return;
        }
        putLocked(key, value, true, true, events);
        statistics.putTime(start);
        listeners.dispatch(events);
    }

    /**
     * Stores {@code value} under the key's lock: writes it through first (if
     * {@code writeThrough}), then creates or updates the entry, unless one is
     * there and {@code replace} is false. {@return the value it replaced, or null}
     */
    private V putLocked(K key, V value, boolean replace, boolean writeThrough, List<EntryEvent<K, V>> events) {
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current != null && !replace) {
                return null;
            }
            if (writeThrough) {
                write(key, value);
            }
            if (current == null) {
                create(key, value, now, events);
                return null;
            }
            update(key, current, value, now, events);
            return current.value();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public V getAndPut(K key, V value) {
        checkOpen();
        checkKey(key);
        checkValue(value);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        ReentrantLock lock = lock(key);
        V old;
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            write(key, value);
            if (current == null) {
                statistics.miss(1);
                create(key, value, now, events);
                old = null;
            } else {
                statistics.hit(1);
                update(key, current, value, now, events);
                old = current.value();
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        statistics.putTime(start);
        listeners.dispatch(events);
        return old;
    }

    @Override
    public void putAll(Map<? extends K, ? extends V> map) {
        checkOpen();
        Objects.requireNonNull(map, "map");
        for (Map.Entry<? extends K, ? extends V> e : map.entrySet()) {
            checkKey(e.getKey());
            checkValue(e.getValue());
        }
        long start = statistics.start();
        Map<K, V> toStore = new LinkedHashMap<>(map);
        CacheWriterException failure = null;
        if (writer != null && config.isWriteThrough()) {
            List<Cache.Entry<? extends K, ? extends V>> entries = new ArrayList<>();
            for (Map.Entry<K, V> e : toStore.entrySet()) {
                entries.add(new CacheEntry<>(e.getKey(), e.getValue()));
            }
            try {
                writer.writeAll(entries);
            } catch (Exception e) {
                failure = writerFailure(e);
                // what is left in the collection was not written: store only the rest
                for (Cache.Entry<? extends K, ? extends V> unwritten : entries) {
                    toStore.remove(unwritten.getKey());
                }
            }
        }
        List<EntryEvent<K, V>> events = events();
        for (Map.Entry<K, V> e : toStore.entrySet()) {
            putLocked(e.getKey(), e.getValue(), true, false, events);
        }
        statistics.putTime(start);
        listeners.dispatch(events);
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public boolean putIfAbsent(K key, V value) {
        checkOpen();
        checkKey(key);
        checkValue(value);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        boolean stored;
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current == null) {
                statistics.miss(1);
                write(key, value);
                create(key, value, now, events);
                stored = true;
            } else {
                statistics.hit(1);
                stored = false;
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        if (stored) {
            statistics.putTime(start);
        }
        listeners.dispatch(events);
        return stored;
    }

    @Override
    public boolean remove(K key) {
        checkOpen();
        checkKey(key);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        boolean removed;
        ReentrantLock lock = lock(key);
        try {
            StoredValue<V> current = live(key, now(), events);
            delete(key);
            removed = current != null && removeEntry(key, current, events);
        } finally {
            lock.unlock();
        }
        statistics.removeTime(start);
        listeners.dispatch(events);
        return removed;
    }

    @Override
    public boolean remove(K key, V oldValue) {
        checkOpen();
        checkKey(key);
        checkValue(oldValue);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        boolean removed = false;
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current == null) {
                statistics.miss(1);
            } else {
                statistics.hit(1);
                if (current.value().equals(oldValue)) {
                    delete(key);
                    removed = removeEntry(key, current, events);
                } else {
                    touch(key, current, now);
                }
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        if (removed) {
            statistics.removeTime(start);
        }
        listeners.dispatch(events);
        return removed;
    }

    @Override
    public V getAndRemove(K key) {
        checkOpen();
        checkKey(key);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        V old = null;
        ReentrantLock lock = lock(key);
        try {
            StoredValue<V> current = live(key, now(), events);
            delete(key);
            if (current == null) {
                statistics.miss(1);
            } else {
                statistics.hit(1);
                removeEntry(key, current, events);
                old = current.value();
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        statistics.removeTime(start);
        listeners.dispatch(events);
        return old;
    }

    @Override
    public boolean replace(K key, V oldValue, V newValue) {
        checkOpen();
        checkKey(key);
        checkValue(oldValue);
        checkValue(newValue);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        boolean replaced = false;
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current == null) {
                statistics.miss(1);
            } else {
                statistics.hit(1);
                if (current.value().equals(oldValue)) {
                    write(key, newValue);
                    update(key, current, newValue, now, events);
                    replaced = true;
                } else {
                    touch(key, current, now);
                }
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        if (replaced) {
            statistics.putTime(start);
        }
        listeners.dispatch(events);
        return replaced;
    }

    @Override
    public boolean replace(K key, V value) {
        return getAndReplace(key, value, false) != null;
    }

    @Override
    public V getAndReplace(K key, V value) {
        return getAndReplace(key, value, true);
    }

    /** {@return the value replaced, or null if there was none} (or a non-null marker if {@code !wantOld}) */
    private V getAndReplace(K key, V value, boolean wantOld) {
        checkOpen();
        checkKey(key);
        checkValue(value);
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        V old = null;
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current == null) {
                statistics.miss(1);
            } else {
                statistics.hit(1);
                write(key, value);
                update(key, current, value, now, events);
                old = current.value();
            }
        } finally {
            lock.unlock();
        }
        statistics.getTime(start);
        if (old != null) {
            statistics.putTime(start);
        }
        listeners.dispatch(events);
        return old;
    }

    @Override
    public void removeAll(Set<? extends K> keys) {
        checkOpen();
        checkKeys(keys);
        removeAll(new LinkedHashSet<K>(keys), true);
    }

    @Override
    public void removeAll() {
        checkOpen();
        Set<K> keys = new LinkedHashSet<>();
        store.forEachKey(keys::add);
        removeAll(keys, false);
    }

    /** Deletes {@code keys} through the writer, then removes those it deleted (the rest stay) and fires events. */
    private void removeAll(Set<K> keys, boolean timed) {
        long start = statistics.start();
        Set<K> toRemove = new LinkedHashSet<>(keys);
        CacheWriterException failure = null;
        if (writer != null && config.isWriteThrough() && !keys.isEmpty()) {
            Collection<Object> remaining = new ArrayList<>(keys);
            try {
                @SuppressWarnings("unchecked")
                Collection<?> forWriter = remaining;
                writer.deleteAll(forWriter);
            } catch (Exception e) {
                failure = writerFailure(e);
                toRemove.removeAll(remaining); // not deleted: they stay
            }
        }
        List<EntryEvent<K, V>> events = events();
        for (K key : toRemove) {
            ReentrantLock lock = lock(key);
            try {
                StoredValue<V> current = live(key, now(), events);
                if (current != null) {
                    removeEntry(key, current, events);
                }
            } finally {
                lock.unlock();
            }
        }
        if (timed) {
            statistics.removeTime(start);
        }
        listeners.dispatch(events);
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public void clear() {
        checkOpen();
        store.clear();
    }

    // ---------------------------------------------------------------- entry processors

    @Override
    public <T> T invoke(K key, EntryProcessor<K, V, T> entryProcessor, Object... arguments) {
        checkOpen();
        checkKey(key);
        Objects.requireNonNull(entryProcessor, "entryProcessor");
        long start = statistics.start();
        List<EntryEvent<K, V>> events = events();
        T result;
        ReentrantLock lock = lock(key);
        try {
            long now = now();
            StoredValue<V> current = live(key, now, events);
            if (current == null) {
                statistics.miss(1);
            } else {
                statistics.hit(1);
            }
            statistics.getTime(start);
            ProcessorEntry<K, V> entry = new ProcessorEntry<>(key, current == null ? null : current.value(),
                    config.isReadThrough() ? loader : null);
            try {
                result = entryProcessor.process(entry, arguments);
            } catch (CacheException e) {
                throw e;
            } catch (Exception e) {
                throw new EntryProcessorException(e);
            }
            apply(key, current, entry, now, events);
        } finally {
            lock.unlock();
        }
        listeners.dispatch(events);
        return result;
    }

    /** Carries out what an entry processor did to its entry (under the key's lock). */
    private void apply(K key, StoredValue<V> current, ProcessorEntry<K, V> entry, long now, List<EntryEvent<K, V>> events) {
        long start = statistics.start();
        switch (entry.operation()) {
            case NONE -> { }
            case ACCESS -> touch(key, current, now);
            case LOAD -> create(key, entry.getValue(), now, events, false);
            case CREATE -> {
                write(key, entry.getValue());
                if (create(key, entry.getValue(), now, events)) {
                    statistics.putTime(start);
                }
            }
            case UPDATE -> {
                write(key, entry.getValue());
                update(key, current, entry.getValue(), now, events);
                statistics.putTime(start);
            }
            case REMOVE -> {
                delete(key);
                if (current != null) {
                    removeEntry(key, current, events);
                } else {
                    statistics.removal(1);
                }
                statistics.removeTime(start);
            }
        }
    }

    @Override
    public <T> Map<K, EntryProcessorResult<T>> invokeAll(Set<? extends K> keys, EntryProcessor<K, V, T> entryProcessor,
            Object... arguments) {
        checkOpen();
        checkKeys(keys);
        Objects.requireNonNull(entryProcessor, "entryProcessor");
        Map<K, EntryProcessorResult<T>> results = new HashMap<>();
        for (K key : keys) {
            try {
                T result = invoke(key, entryProcessor, arguments);
                if (result != null) {
                    results.put(key, () -> result);
                }
            } catch (Exception e) {
                EntryProcessorException failure = e instanceof EntryProcessorException p ? p
                        : new EntryProcessorException(e);
                results.put(key, () -> {
                    throw failure;
                });
            }
        }
        return results;
    }

    // ---------------------------------------------------------------- listeners, configuration, lifecycle

    @Override
    public void registerCacheEntryListener(CacheEntryListenerConfiguration<K, V> cacheEntryListenerConfiguration) {
        checkOpen();
        Objects.requireNonNull(cacheEntryListenerConfiguration, "cacheEntryListenerConfiguration");
        listeners.register(cacheEntryListenerConfiguration);
        config.addCacheEntryListenerConfiguration(cacheEntryListenerConfiguration);
    }

    @Override
    public void deregisterCacheEntryListener(CacheEntryListenerConfiguration<K, V> cacheEntryListenerConfiguration) {
        checkOpen();
        Objects.requireNonNull(cacheEntryListenerConfiguration, "cacheEntryListenerConfiguration");
        listeners.deregister(cacheEntryListenerConfiguration);
        config.removeCacheEntryListenerConfiguration(cacheEntryListenerConfiguration);
    }

    @Override
    public <C extends Configuration<K, V>> C getConfiguration(Class<C> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        OffHeapConfiguration<K, V> copy = new OffHeapConfiguration<>(config);
        if (clazz.isInstance(copy)) {
            return clazz.cast(copy);
        }
        throw new IllegalArgumentException("the configuration is not a " + clazz.getName());
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public CacheManager getCacheManager() {
        return manager;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        manager.closed(this);
        ManagementBeans.unregister(statisticsName);
        ManagementBeans.unregister(configurationName);
        listeners.close();
        EntryListeners.closeQuietly(loader);
        EntryListeners.closeQuietly(writer);
        EntryListeners.closeQuietly(expiry);
        store.close();
    }

    /**
     * {@return this cache, or the {@link OffHeapCache} below it, as {@code clazz}}
     * The OffHeapCache's values are this cache's stored values (the expiry time and
     * the value), so write to it only through this cache.
     *
     * @throws IllegalArgumentException if neither is a {@code clazz}
     */
    @Override
    public <T> T unwrap(Class<T> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        if (clazz.isInstance(this)) {
            return clazz.cast(this);
        }
        if (clazz.isInstance(store)) {
            return clazz.cast(store);
        }
        throw new IllegalArgumentException("a spanheap cache cannot be unwrapped to " + clazz.getName());
    }

    @Override
    public Iterator<Cache.Entry<K, V>> iterator() {
        checkOpen();
        List<K> keys = new ArrayList<>();
        store.forEachKey(keys::add);
        return new EntryIterator(keys.iterator());
    }

    /** Iterates over a snapshot of the keys, reading each value when reached (a hit) and skipping those gone since. */
    private final class EntryIterator implements Iterator<Cache.Entry<K, V>> {
        private final Iterator<K> keys;
        private Cache.Entry<K, V> next;
        private Cache.Entry<K, V> last;

        EntryIterator(Iterator<K> keys) {
            this.keys = keys;
        }

        @Override
        public boolean hasNext() {
            checkOpen();
            while (next == null && keys.hasNext()) {
                K key = keys.next();
                List<EntryEvent<K, V>> events = events();
                V value = null;
                long start = statistics.start();
                ReentrantLock lock = lock(key);
                try {
                    long now = now();
                    StoredValue<V> current = live(key, now, events);
                    if (current != null) {
                        statistics.hit(1);
                        touch(key, current, now);
                        value = current.value();
                    }
                } finally {
                    lock.unlock();
                }
                statistics.getTime(start);
                listeners.dispatch(events);
                if (value != null) {
                    next = new CacheEntry<>(key, value);
                }
            }
            return next != null;
        }

        @Override
        public Cache.Entry<K, V> next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            last = next;
            next = null;
            return last;
        }

        @Override
        public void remove() {
            if (last == null) {
                throw new IllegalStateException("next() was not called, or remove() was called after it already");
            }
            SpanheapCache.this.remove(last.getKey());
            last = null;
        }
    }

    void enableStatistics(boolean enabled) {
        statistics.enable(enabled);
        config.setStatisticsEnabled(enabled);
        if (enabled) {
            ManagementBeans.register(statisticsName, statistics, CacheStatisticsMXBean.class);
        } else {
            ManagementBeans.unregister(statisticsName);
        }
    }

    void enableManagement(boolean enabled) {
        config.setManagementEnabled(enabled);
        if (enabled) {
            ManagementBeans.register(configurationName, configurationView, CacheMXBean.class);
        } else {
            ManagementBeans.unregister(configurationName);
        }
    }

    // ---------------------------------------------------------------- the steps operations are made of

    private static long now() {
        return System.currentTimeMillis();
    }

    private ReentrantLock lock(K key) {
        int h = key.hashCode();
        h ^= h >>> 16;
        ReentrantLock lock = locks[(h * 0x9E3779B9 >>> 24) & (STRIPES - 1)];
        lock.lock();
        return lock;
    }

    /** {@return a list for the events of an operation, or null if no listener is registered} */
    private List<EntryEvent<K, V>> events() {
        return listeners.any() ? new ArrayList<>(2) : null;
    }

    private void event(List<EntryEvent<K, V>> events, EventType type, K key, V value, V old) {
        if (events != null) {
            boolean removal = type == EventType.REMOVED || type == EventType.EXPIRED;
            events.add(new EntryEvent<>(this, type, key, removal ? old : value, old, type != EventType.CREATED));
        }
    }

    /**
     * {@return the key's entry if it has one that has not expired} An expired one
     * is removed here and reported to the listeners (under the key's lock).
     */
    private StoredValue<V> live(K key, long now, List<EntryEvent<K, V>> events) {
        StoredValue<V> current = store.get(key);
        if (current == null || !current.expiredAt(now)) {
            return current;
        }
        store.remove(key);
        event(events, EventType.EXPIRED, key, null, current.value());
        return null;
    }

    /** Stores a new entry with the policy's expiry for creation. {@return whether it was stored (not already expired)} */
    private boolean create(K key, V value, long now, List<EntryEvent<K, V>> events) {
        return create(key, value, now, events, true);
    }

    /** As {@link #create(Object, Object, long, List)}; a loaded value ({@code countPut} false) is not a put. */
    private boolean create(K key, V value, long now, List<EntryEvent<K, V>> events, boolean countPut) {
        long expiresAt = expiresAt(() -> expiry.getExpiryForCreation(), now, StoredValue.ETERNAL, StoredValue.ETERNAL);
        if (expiresAt <= now) {
            return false; // expired as it is made: never stored, as the specification says
        }
        store.put(key, new StoredValue<>(value, expiresAt));
        if (countPut) {
            statistics.put(1);
        }
        event(events, EventType.CREATED, key, value, null);
        return true;
    }

    /** Replaces an entry's value, with the policy's expiry for update (null: the entry's expiry stays). */
    private void update(K key, StoredValue<V> current, V value, long now, List<EntryEvent<K, V>> events) {
        long expiresAt = expiresAt(() -> expiry.getExpiryForUpdate(), now, current.expiresAtMillis(),
                current.expiresAtMillis());
        store.put(key, new StoredValue<>(value, expiresAt));
        statistics.put(1);
        event(events, EventType.UPDATED, key, value, current.value());
    }

    /** Applies the policy's expiry for access to an entry that was read (a rewrite if it changes). */
    private void touch(K key, StoredValue<V> current, long now) {
        if (expiry == null) {
            return;
        }
        long expiresAt = expiresAt(() -> expiry.getExpiryForAccess(), now, current.expiresAtMillis(),
                current.expiresAtMillis());
        if (expiresAt != current.expiresAtMillis()) {
            store.put(key, new StoredValue<>(current.value(), expiresAt));
        }
    }

    private boolean removeEntry(K key, StoredValue<V> current, List<EntryEvent<K, V>> events) {
        boolean removed = store.remove(key);
        if (removed) {
            statistics.removal(1);
            event(events, EventType.REMOVED, key, null, current.value());
        }
        return removed;
    }

    /**
     * {@return the expiry time a policy's duration gives at {@code now}} A null
     * duration gives {@code ifNull}; a policy that throws gives {@code ifFailed}
     * (the specification's default for creation, no change otherwise).
     */
    private long expiresAt(Supplier<Duration> duration, long now, long ifNull, long ifFailed) {
        if (expiry == null) {
            return StoredValue.ETERNAL;
        }
        Duration d;
        try {
            d = duration.get();
        } catch (RuntimeException e) {
            return ifFailed;
        }
        if (d == null) {
            return ifNull;
        }
        if (d.isEternal()) {
            return StoredValue.ETERNAL;
        }
        if (d.isZero()) {
            return now;
        }
        long at = d.getAdjustedTime(now);
        return at <= 0 ? StoredValue.ETERNAL : at; // overflowed: as good as never
    }

    private V load(K key) {
        try {
            return loader.load(key);
        } catch (CacheLoaderException e) {
            throw e;
        } catch (Exception e) {
            throw new CacheLoaderException("the cache loader failed for " + key + ": " + e, e);
        }
    }

    private Map<K, V> loadAll(Set<K> keys) {
        try {
            Map<K, V> loaded = loader.loadAll(keys);
            return loaded == null ? Map.of() : loaded;
        } catch (CacheLoaderException e) {
            throw e;
        } catch (Exception e) {
            throw new CacheLoaderException("the cache loader failed: " + e, e);
        }
    }

    private void write(K key, V value) {
        if (writer == null || !config.isWriteThrough()) {
            return;
        }
        try {
            writer.write(new CacheEntry<>(key, value));
        } catch (Exception e) {
            throw writerFailure(e);
        }
    }

    private void delete(K key) {
        if (writer == null || !config.isWriteThrough()) {
            return;
        }
        try {
            writer.delete(key);
        } catch (Exception e) {
            throw writerFailure(e);
        }
    }

    private static CacheWriterException writerFailure(Exception e) {
        return e instanceof CacheWriterException w ? w : new CacheWriterException("the cache writer failed: " + e, e);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the cache " + name + " is closed");
        }
    }

    private void checkKey(K key) {
        Objects.requireNonNull(key, "key");
        if (!keyType.isInstance(key)) {
            throw new ClassCastException("cache " + name + " takes keys of " + keyType.getName() + ", not "
                    + key.getClass().getName());
        }
    }

    private void checkValue(V value) {
        Objects.requireNonNull(value, "value");
        if (!valueType.isInstance(value)) {
            throw new ClassCastException("cache " + name + " takes values of " + valueType.getName() + ", not "
                    + value.getClass().getName());
        }
    }

    private void checkKeys(Set<? extends K> keys) {
        Objects.requireNonNull(keys, "keys");
        for (K key : keys) {
            checkKey(key);
        }
    }

    @Override
    public String toString() {
        return "SpanheapCache[" + name + "]";
    }
}
