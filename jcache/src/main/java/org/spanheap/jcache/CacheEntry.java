package org.spanheap.jcache;

import java.util.Objects;
import javax.cache.Cache;

/**
 * A key and value of a JCache cache, as its iterator and the writer see them:
 * copies read out of the cache.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class CacheEntry<K, V> implements Cache.Entry<K, V> {
    private final K key;
    private final V value;

    CacheEntry(K key, V value) {
        this.key = key;
        this.value = value;
    }

    @Override
    public K getKey() {
        return key;
    }

    @Override
    public V getValue() {
        return value;
    }

    /**
     * {@return this entry as {@code clazz}}
     *
     * @param <T> the type to unwrap to
     * @param clazz the class to unwrap to
     * @throws IllegalArgumentException if this entry is not a {@code clazz}
     */
    @Override
    public <T> T unwrap(Class<T> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        if (clazz.isInstance(this)) {
            return clazz.cast(this);
        }
        throw new IllegalArgumentException("a cache entry cannot be unwrapped to " + clazz.getName());
    }

    @Override
    public String toString() {
        return key + "=" + value;
    }
}
