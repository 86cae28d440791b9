package org.spanheap.cache;

/**
 * Told of every entry that leaves an {@link OffHeapCache}, except on
 * {@link OffHeapCache#close()}. It runs on the thread whose operation removed
 * the entry, after that operation; what it throws is logged and ignored.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
@FunctionalInterface
public interface RemovalListener<K, V> {
    /**
     * Called once per removed entry.
     *
     * @param key the entry's key, read back through the key serializer
     * @param value the entry's value, read back through the value serializer
     * @param cause why it left
     */
    void onRemoval(K key, V value, RemovalCause cause);
}
