package org.spanheap.jcache;

import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import javax.cache.Cache;
import javax.cache.CacheException;
import javax.cache.CacheManager;
import javax.cache.configuration.CompleteConfiguration;
import javax.cache.configuration.Configuration;
import javax.cache.configuration.MutableConfiguration;
import javax.cache.spi.CachingProvider;

/**
 * The caches of one URI and class loader of {@link SpanheapCachingProvider}.
 * Each cache is an {@link org.spanheap.cache.OffHeapCache} with a compacting
 * heap of its own, configured by an {@link OffHeapConfiguration} or any other
 * JCache configuration (then with the default capacity: the
 * {@value OffHeapConfiguration#CAPACITY_PROPERTY} property, else
 * {@value OffHeapConfiguration#DEFAULT_CAPACITY} bytes).
 */
public final class SpanheapCacheManager implements CacheManager {

    private final SpanheapCachingProvider provider;
    private final URI uri;
    private final ClassLoader classLoader;
    private final Properties properties;
    private final long defaultCapacity;
    private final ConcurrentHashMap<String, SpanheapCache<?, ?>> caches = new ConcurrentHashMap<>();
    private volatile boolean closed;

    SpanheapCacheManager(SpanheapCachingProvider provider, URI uri, ClassLoader classLoader, Properties properties) {
        this.provider = provider;
        this.uri = uri;
        this.classLoader = classLoader;
        this.properties = new Properties();
        this.properties.putAll(properties);
        this.defaultCapacity = capacityProperty(properties);
    }

    private static long capacityProperty(Properties properties) {
        String value = properties.getProperty(OffHeapConfiguration.CAPACITY_PROPERTY);
        if (value == null) {
            return OffHeapConfiguration.DEFAULT_CAPACITY;
        }
        try {
            long bytes = Long.parseLong(value.trim());
            if (bytes > 0) {
                return bytes;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(OffHeapConfiguration.CAPACITY_PROPERTY
                + " must be a positive number of bytes: " + value);
    }

    @Override
    public CachingProvider getCachingProvider() {
        return provider;
    }

    @Override
    public URI getURI() {
        return uri;
    }

    @Override
    public ClassLoader getClassLoader() {
        return classLoader;
    }

    @Override
    public Properties getProperties() {
        return properties;
    }

    /**
     * {@inheritDoc} The configuration is copied; an {@link OffHeapConfiguration} gives the
     * cache's capacity, heap and serializers, any other configuration the defaults.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param <C> the configuration type
     * @param cacheName the cache's name
     * @param configuration the cache's configuration
     * @return the new cache
     * @throws UnsupportedOperationException if the configuration asks for store-by-reference
     */
    @Override
    @SuppressWarnings("unchecked")
    public <K, V, C extends Configuration<K, V>> Cache<K, V> createCache(String cacheName, C configuration) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        Objects.requireNonNull(configuration, "configuration");
        OffHeapConfiguration<K, V> config = configuration instanceof CompleteConfiguration<K, V> complete
                ? new OffHeapConfiguration<>(complete)
                : new OffHeapConfiguration<>(new MutableConfiguration<K, V>()
                        .setTypes(configuration.getKeyType(), configuration.getValueType())
                        .setStoreByValue(configuration.isStoreByValue()));
        if (!config.isStoreByValue()) {
            throw new UnsupportedOperationException("store-by-reference is not supported (cache " + cacheName
                    + "): spanheap keeps keys and values as serialized bytes");
        }
        if (config.getCapacity() == 0) {
            config.setCapacity(defaultCapacity);
        }
        SpanheapCache<?, ?>[] made = new SpanheapCache<?, ?>[1];
        caches.compute(cacheName, (name, existing) -> {
            if (existing != null) {
                throw new CacheException("a cache named " + name + " exists already");
            }
            made[0] = new SpanheapCache<>(this, name, config);
            return made[0];
        });
        return (Cache<K, V>) made[0];
    }

    @Override
    @SuppressWarnings("unchecked")
    public <K, V> Cache<K, V> getCache(String cacheName, Class<K> keyType, Class<V> valueType) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        Objects.requireNonNull(keyType, "keyType");
        Objects.requireNonNull(valueType, "valueType");
        SpanheapCache<?, ?> cache = caches.get(cacheName);
        if (cache == null) {
            return null;
        }
        CompleteConfiguration<?, ?> config = cache.getConfiguration(CompleteConfiguration.class);
        if (config.getKeyType() != keyType || config.getValueType() != valueType) {
            throw new ClassCastException("cache " + cacheName + " has types " + config.getKeyType().getName()
                    + ", " + config.getValueType().getName() + ", not " + keyType.getName() + ", "
                    + valueType.getName());
        }
        return (Cache<K, V>) cache;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <K, V> Cache<K, V> getCache(String cacheName) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        return (Cache<K, V>) caches.get(cacheName);
    }

    @Override
    public Iterable<String> getCacheNames() {
        checkOpen();
        return Collections.unmodifiableSet(new LinkedHashSet<>(caches.keySet()));
    }

    @Override
    public void destroyCache(String cacheName) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        SpanheapCache<?, ?> cache = caches.remove(cacheName);
        if (cache != null) {
            cache.close();
        }
    }

    @Override
    public void enableManagement(String cacheName, boolean enabled) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        SpanheapCache<?, ?> cache = caches.get(cacheName);
        if (cache != null) {
            cache.enableManagement(enabled);
        }
    }

    @Override
    public void enableStatistics(String cacheName, boolean enabled) {
        checkOpen();
        Objects.requireNonNull(cacheName, "cacheName");
        SpanheapCache<?, ?> cache = caches.get(cacheName);
        if (cache != null) {
            cache.enableStatistics(enabled);
        }
    }

    /** Forgets a cache that was closed, so that its name can be used again. */
    void closed(SpanheapCache<?, ?> cache) {
        caches.remove(cache.getName(), cache);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        provider.closed(this);
        for (SpanheapCache<?, ?> cache : caches.values()) {
            try {
                cache.close();
            } catch (RuntimeException ignored) {
                // close the others all the same
            }
        }
        caches.clear();
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    /**
     * {@return this manager as {@code clazz}}
     *
     * @param <T> the type to unwrap to
     * @param clazz the class to unwrap to
     * @throws IllegalArgumentException if this manager is not a {@code clazz}
     */
    @Override
    public <T> T unwrap(Class<T> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        if (clazz.isInstance(this)) {
            return clazz.cast(this);
        }
        throw new IllegalArgumentException("a cache manager cannot be unwrapped to " + clazz.getName());
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the cache manager " + uri + " is closed");
        }
    }
}
