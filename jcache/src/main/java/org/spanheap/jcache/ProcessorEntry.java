package org.spanheap.jcache;

import java.util.Objects;
import javax.cache.integration.CacheLoader;
import javax.cache.integration.CacheLoaderException;
import javax.cache.processor.MutableEntry;

/**
 * The entry an {@link javax.cache.processor.EntryProcessor} works on: a copy of
 * the key's value, and a record of what the processor did to it, which the
 * cache carries out when the processor returns (so a processor that throws
 * changes nothing).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class ProcessorEntry<K, V> implements MutableEntry<K, V> {

    /** What the processor did, as the cache carries it out. */
    enum Operation {
        /** Nothing, or looked at a missing entry. */
        NONE,
        /** Read the existing value: an access for the expiry policy. */
        ACCESS,
        /** Read a missing value through the loader: stored, not written through. */
        LOAD,
        /** Set a value where there was none. */
        CREATE,
        /** Set a new value over an existing one. */
        UPDATE,
        /** Removed the existing value. */
        REMOVE
    }

    private final K key;
    /** The value before the processor ran, or null. */
    private final V original;
    private final CacheLoader<K, V> loader;
    private V value;
    private Operation operation = Operation.NONE;

    ProcessorEntry(K key, V original, CacheLoader<K, V> loader) {
        this.key = key;
        this.original = original;
        this.value = original;
        this.loader = loader;
    }

    Operation operation() {
        return operation;
    }

    @Override
    public K getKey() {
        return key;
    }

    @Override
    public V getValue() {
        if (value != null) {
            if (operation == Operation.NONE) {
                operation = Operation.ACCESS;
            }
            return value;
        }
        if (operation == Operation.NONE && loader != null) {
            try {
                value = loader.load(key);
            } catch (CacheLoaderException e) {
                throw e;
            } catch (Exception e) {
                throw new CacheLoaderException("the cache loader failed for " + key + ": " + e, e);
            }
            if (value != null) {
                operation = Operation.LOAD;
            }
        }
        return value;
    }

    @Override
    public boolean exists() {
        return value != null;
    }

    @Override
    public void remove() {
        // removing a missing entry still deletes the key through the writer, as the TCK checks
        operation = operation == Operation.CREATE || operation == Operation.LOAD ? Operation.NONE : Operation.REMOVE;
        value = null;
    }

    @Override
    public void setValue(V newValue) {
        Objects.requireNonNull(newValue, "value");
        operation = original == null ? Operation.CREATE : Operation.UPDATE;
        value = newValue;
    }

    @Override
    public <T> T unwrap(Class<T> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        if (clazz.isInstance(this)) {
            return clazz.cast(this);
        }
        throw new IllegalArgumentException("a mutable entry cannot be unwrapped to " + clazz.getName());
    }
}
