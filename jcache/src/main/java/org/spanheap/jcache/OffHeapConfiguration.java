package org.spanheap.jcache;

import java.util.Objects;
import javax.cache.configuration.CompleteConfiguration;
import javax.cache.configuration.MutableConfiguration;
import org.spanheap.CompactingHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializer;

/**
 * A JCache configuration with what an {@link OffHeapCache} needs besides: its
 * capacity in bytes, the compacting heap its values live in, and the
 * serializers of its keys and values.
 *
 * <p>Without serializers, keys and values of type {@code String} or {@code Long}
 * (as {@link #setTypes} declares them) get spanheap-cache's built-in ones, and
 * any other type Java serialization (it must then be {@link java.io.Serializable}).
 * A plain {@link MutableConfiguration} given to {@code createCache} gets the
 * provider's default capacity (the {@value #CAPACITY_PROPERTY} property of the
 * cache manager, else {@value #DEFAULT_CAPACITY} bytes).
 *
 * {@snippet :
 * OffHeapConfiguration<String, byte[]> config = new OffHeapConfiguration<String, byte[]>()
 *         .setCapacity(256L << 20)
 *         .setSerializers(Serializers.utf8(), Serializers.bytes());
 * config.setTypes(String.class, byte[].class)
 *       .setExpiryPolicyFactory(CreatedExpiryPolicy.factoryOf(Duration.TEN_MINUTES));
 * Cache<String, byte[]> cache = Caching.getCachingProvider().getCacheManager().createCache("pages", config);
 * }
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class OffHeapConfiguration<K, V> extends MutableConfiguration<K, V> {

    private static final long serialVersionUID = 1L;

    /** The cache manager property that sets the capacity of caches configured without one, in bytes. */
    public static final String CAPACITY_PROPERTY = "org.spanheap.jcache.capacity";

    /** The capacity of a cache configured without one: 64 MiB. */
    public static final long DEFAULT_CAPACITY = 64L << 20;

    /** The capacity in bytes; 0 for the provider's default. */
    private long capacity;
    /** The heap's builder; null for the default. Not serialized: a builder is not data. */
    private transient CompactingHeap.Builder heap;
    /** The key serializer; null for the key type's default. Not serialized. */
    private transient Serializer<K> keySerializer;
    /** The value serializer; null for the value type's default. Not serialized. */
    private transient Serializer<V> valueSerializer;

    /** A configuration of defaults: {@link MutableConfiguration}'s, and the provider's capacity. */
    public OffHeapConfiguration() {}

    /**
     * A copy of {@code configuration}; if it is an {@code OffHeapConfiguration},
     * its capacity, heap and serializers too.
     *
     * @param configuration what to copy
     * @throws NullPointerException if {@code configuration} is null
     */
    public OffHeapConfiguration(CompleteConfiguration<K, V> configuration) {
        super(Objects.requireNonNull(configuration, "configuration"));
        if (configuration instanceof OffHeapConfiguration<K, V> o) {
            this.capacity = o.capacity;
            this.heap = o.heap;
            this.keySerializer = o.keySerializer;
            this.valueSerializer = o.valueSerializer;
        }
    }

    /** {@return the capacity in bytes, or 0 for the provider's default} */
    public long getCapacity() {
        return capacity;
    }

    /**
     * Sets the capacity: what the cache's entries may take in all, as
     * {@link OffHeapCache} charges them (values off-heap, keys and index entries on it).
     *
     * @param bytes the capacity in bytes, positive
     * @return this configuration
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public OffHeapConfiguration<K, V> setCapacity(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + bytes);
        }
        this.capacity = bytes;
        return this;
    }

    /** {@return the builder of the cache's compacting heap, or null for {@link OffHeapCache#defaultHeap()}} */
    public CompactingHeap.Builder getHeap() {
        return heap;
    }

    /**
     * Sets the builder of the compacting heap the cache's values live in (its
     * compaction thresholds and pauses).
     *
     * @param heap the heap's builder
     * @return this configuration
     * @throws NullPointerException if {@code heap} is null
     */
    public OffHeapConfiguration<K, V> setHeap(CompactingHeap.Builder heap) {
        this.heap = Objects.requireNonNull(heap, "heap");
        return this;
    }

    /** {@return the key serializer, or null for the default of the key type} */
    public Serializer<K> getKeySerializer() {
        return keySerializer;
    }

    /** {@return the value serializer, or null for the default of the value type} */
    public Serializer<V> getValueSerializer() {
        return valueSerializer;
    }

    /**
     * Sets the serializers of keys and values. Keys are equal for the cache when
     * their serialized bytes are, so the key serializer must write equal keys alike.
     *
     * @param keys the key serializer
     * @param values the value serializer
     * @return this configuration
     * @throws NullPointerException if either is null
     */
    public OffHeapConfiguration<K, V> setSerializers(Serializer<K> keys, Serializer<V> values) {
        this.keySerializer = Objects.requireNonNull(keys, "keys");
        this.valueSerializer = Objects.requireNonNull(values, "values");
        return this;
    }
}
