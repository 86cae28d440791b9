package org.spanheap.jcache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import javax.cache.CacheException;
import org.spanheap.cache.Serializer;

/**
 * A value as a JCache cache keeps it in its {@link org.spanheap.cache.OffHeapCache}:
 * the user's value and the wall-clock time (milliseconds since the epoch) at
 * which it expires, {@link #ETERNAL} for never.
 *
 * @param value the user's value
 * @param expiresAtMillis when it expires, {@link #ETERNAL} for never
 * @param <V> the value type
 */
record StoredValue<V>(V value, long expiresAtMillis) {

    /** The expiry time of a value that never expires. */
    static final long ETERNAL = Long.MAX_VALUE;

    /** {@return whether the value has expired at {@code nowMillis}} */
    boolean expiredAt(long nowMillis) {
        return expiresAtMillis <= nowMillis;
    }

    /**
     * The bytes of a stored value: the expiry time, then the user's value as its
     * serializer writes it. A cache whose values never expire (an eternal expiry
     * policy) leaves the time out and stores the value's bytes alone.
     *
     * <pre>
     *  timed:    | expiresAtMillis (8, native order) | value bytes ... |
     *  eternal:  | value bytes ... |
     * </pre>
     *
     * A serializer that throws surfaces as a {@link CacheException} with its
     * exception as the cause; the cache is then unchanged (the store fails
     * before anything is published). An {@link IllegalStateException} thrown
     * while the segment's scope is closed passes through: the compacting heap closes a
     * segment whose bytes it moves, catches that exception and reruns the serializer.
     *
     * @param <V> the value type
     */
    static final class Codec<V> implements Serializer<StoredValue<V>> {
        private static final long HEADER = Long.BYTES;

        private final Serializer<V> values;
        private final boolean timed;

        Codec(Serializer<V> values, boolean timed) {
            this.values = values;
            this.timed = timed;
        }

        boolean timed() {
            return timed;
        }

        /** {@return a reader of the user's value alone, for an untimed codec: no {@code StoredValue} is made} */
        java.util.function.Function<MemorySegment, V> valueReader() {
            if (timed) {
                throw new IllegalStateException("a timed codec's bytes start with the expiry time");
            }
            return source -> {
                try {
                    return values.read(source);
                } catch (CacheException e) {
                    throw e;
                } catch (IllegalStateException e) {
                    throw movedOrFailed(e, source, "the value serializer failed to read a stored value");
                } catch (RuntimeException e) {
                    throw new CacheException("the value serializer failed to read a stored value", e);
                }
            };
        }

        @Override
        public long size(StoredValue<V> stored) {
            try {
                return (timed ? HEADER : 0) + values.size(stored.value());
            } catch (CacheException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new CacheException("the value serializer failed on a " + stored.value().getClass().getName(), e);
            }
        }

        @Override
        public void write(StoredValue<V> stored, MemorySegment target) {
            try {
                if (timed) {
                    target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, stored.expiresAtMillis());
                    values.write(stored.value(), target.asSlice(HEADER));
                } else {
                    values.write(stored.value(), target);
                }
            } catch (CacheException e) {
                throw e;
            } catch (IllegalStateException e) {
                throw movedOrFailed(e, target, "the value serializer failed on a " + stored.value().getClass().getName());
            } catch (RuntimeException e) {
                throw new CacheException("the value serializer failed on a " + stored.value().getClass().getName(), e);
            }
        }

        @Override
        public StoredValue<V> read(MemorySegment source) {
            try {
                if (timed) {
                    return new StoredValue<>(values.read(source.asSlice(HEADER)),
                            source.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
                }
                return new StoredValue<>(values.read(source), ETERNAL);
            } catch (CacheException e) {
                throw e;
            } catch (IllegalStateException e) {
                throw movedOrFailed(e, source, "the value serializer failed to read a stored value");
            } catch (RuntimeException e) {
                throw new CacheException("the value serializer failed to read a stored value", e);
            }
        }

        /** {@return whether the bytes of a stored value have expired at {@code nowMillis}, without reading the value} */
        boolean expiredAt(MemorySegment source, long nowMillis) {
            return timed && source.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) <= nowMillis;
        }
    }

    /**
     * The compacting heap closes the scope of a segment whose bytes it moves, catches the
     * {@link IllegalStateException} that a serializer then meets and reruns it on the new place;
     * so that exception passes through while {@code segment}'s scope is closed. Thrown while the
     * scope is alive, it is the serializer's own failure and surfaces as a {@link CacheException}.
     */
    static RuntimeException movedOrFailed(IllegalStateException e, MemorySegment segment, String message) {
        return segment.scope().isAlive() ? new CacheException(message, e) : e;
    }

    /**
     * Wraps a key serializer so that its failures surface as {@link CacheException}s with the cause.
     *
     * @param <K> the key type
     */
    static final class GuardedKeys<K> implements Serializer<K> {
        private final Serializer<K> keys;

        GuardedKeys(Serializer<K> keys) {
            this.keys = keys;
        }

        @Override
        public long size(K key) {
            try {
                return keys.size(key);
            } catch (CacheException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new CacheException("the key serializer failed on a " + key.getClass().getName(), e);
            }
        }

        @Override
        public void write(K key, MemorySegment target) {
            try {
                keys.write(key, target);
            } catch (CacheException e) {
                throw e;
            } catch (IllegalStateException e) {
                throw movedOrFailed(e, target, "the key serializer failed on a " + key.getClass().getName());
            } catch (RuntimeException e) {
                throw new CacheException("the key serializer failed on a " + key.getClass().getName(), e);
            }
        }

        @Override
        public K read(MemorySegment source) {
            try {
                return keys.read(source);
            } catch (CacheException e) {
                throw e;
            } catch (IllegalStateException e) {
                throw movedOrFailed(e, source, "the key serializer failed to read a stored key");
            } catch (RuntimeException e) {
                throw new CacheException("the key serializer failed to read a stored key", e);
            }
        }
    }
}
