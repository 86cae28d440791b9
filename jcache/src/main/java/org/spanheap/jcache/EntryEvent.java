package org.spanheap.jcache;

import java.util.Objects;
import javax.cache.Cache;
import javax.cache.event.CacheEntryEvent;
import javax.cache.event.EventType;

/**
 * A change of one entry, as a listener sees it. For an update the old value is
 * there if the listener's configuration asked for old values; for a removal or
 * an expiry the value and the old value are both the value that left, again
 * only if old values were asked for (else both are null).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
// EventObject is Serializable; keys and values are whatever the cache holds, so the
// fields cannot be declared Serializable: events are for listeners in this JVM.
@SuppressWarnings("serial")
final class EntryEvent<K, V> extends CacheEntryEvent<K, V> {
    private static final long serialVersionUID = 1L;

    /** The cache the event comes from (the source, typed). */
    private final transient Cache<K, V> cache;
    private final K key;
    private final V value;
    private final V oldValue;
    private final boolean oldValueAvailable;

    EntryEvent(Cache<K, V> source, EventType type, K key, V value, V oldValue, boolean oldValueAvailable) {
        super(source, type);
        this.cache = source;
        this.key = key;
        this.value = value;
        this.oldValue = oldValue;
        this.oldValueAvailable = oldValueAvailable;
    }

    /** {@return this event as a listener that did or did not ask for old values sees it} */
    EntryEvent<K, V> forListener(boolean oldValueRequired) {
        if (oldValueRequired || !oldValueAvailable) {
            return this;
        }
        EventType type = getEventType();
        boolean removal = type == EventType.REMOVED || type == EventType.EXPIRED;
        return new EntryEvent<>(cache, type, key, removal ? null : value, null, false);
    }

    @Override
    public K getKey() {
        return key;
    }

    @Override
    public V getValue() {
        return value;
    }

    @Override
    public V getOldValue() {
        return oldValue;
    }

    @Override
    public boolean isOldValueAvailable() {
        return oldValueAvailable;
    }

    @Override
    public <T> T unwrap(Class<T> clazz) {
        Objects.requireNonNull(clazz, "clazz");
        if (clazz.isInstance(this)) {
            return clazz.cast(this);
        }
        throw new IllegalArgumentException("an entry event cannot be unwrapped to " + clazz.getName());
    }

    @Override
    public String toString() {
        return getEventType() + " " + key + "=" + value + (oldValueAvailable ? " (was " + oldValue + ")" : "");
    }
}
