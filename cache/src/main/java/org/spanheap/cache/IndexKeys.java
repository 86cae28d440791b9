package org.spanheap.cache;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * How a cache's keys appear in its on-heap index. Keys are equal when their
 * serialized bytes are; {@code String} and {@code Long} keys with the built-in
 * serializers already compare that way and are indexed as they are (no bytes
 * made per lookup); any other key is indexed by its serialized bytes.
 */
abstract class IndexKeys<K> {

    /** {@return the index key to look {@code key} up with; it is not kept} */
    abstract Object lookup(K key);

    /** {@return the index key to store; it must not change after the call} */
    abstract Object stored(K key);

    /** {@return the user's key for an index key} */
    abstract K userKey(Object indexKey);

    /**
     * What an object key costs besides its length: the headers of a
     * {@code KeyBytes} and its array, or of a {@code String} and its array
     * (40 bytes), and in the index its reference and the word that keeps its
     * hash (12; an entry of a {@code long} key keeps the key in that word).
     */
    static final int OBJECT_KEY_BYTES = 52;

    /** {@return the Java heap bytes the index key takes, charged in the entry's weight} */
    abstract long chargedBytes(Object indexKey);

    /** {@return whether every index key is a {@code Long}, which the index keeps as a {@code long}} */
    boolean longs() {
        return false;
    }

    @SuppressWarnings("unchecked")
    static <K> IndexKeys<K> of(Serializer<K> serializer) {
        if (serializer == Serializers.utf8()) {
            return (IndexKeys<K>) new Itself<>(s -> OBJECT_KEY_BYTES + (long) ((String) s).length(), false);
        }
        if (serializer == Serializers.longs()) {
            return (IndexKeys<K>) new Itself<>(l -> 8, true); // kept as a long in the entry's words
        }
        if (serializer == Serializers.bytes()) {
            return (IndexKeys<K>) new ByteArrayKeys();
        }
        return new Serialized<>(serializer);
    }

    /** Immutable keys whose {@code equals} is equality of their serialized bytes. */
    private static final class Itself<K> extends IndexKeys<K> {
        private final java.util.function.ToLongFunction<Object> charge;
        private final boolean longs;

        Itself(java.util.function.ToLongFunction<Object> charge, boolean longs) {
            this.charge = charge;
            this.longs = longs;
        }

        @Override
        boolean longs() {
            return longs;
        }

        @Override
        Object lookup(K key) {
            return key;
        }

        @Override
        Object stored(K key) {
            return key;
        }

        @Override
        @SuppressWarnings("unchecked")
        K userKey(Object indexKey) {
            return (K) indexKey;
        }

        @Override
        long chargedBytes(Object indexKey) {
            return charge.applyAsLong(indexKey);
        }
    }

    /** {@code byte[]} keys: wrapped, and copied when stored (the caller may change its array). */
    private static final class ByteArrayKeys extends IndexKeys<byte[]> {
        @Override
        Object lookup(byte[] key) {
            return new KeyBytes(key);
        }

        @Override
        Object stored(byte[] key) {
            return new KeyBytes(key.clone());
        }

        @Override
        byte[] userKey(Object indexKey) {
            return ((KeyBytes) indexKey).bytes.clone();
        }

        @Override
        long chargedBytes(Object indexKey) {
            return OBJECT_KEY_BYTES + ((KeyBytes) indexKey).bytes.length;
        }
    }

    /** Keys of any other serializer: indexed by a fresh copy of their bytes. */
    private static final class Serialized<K> extends IndexKeys<K> {
        private final Serializer<K> serializer;

        Serialized(Serializer<K> serializer) {
            this.serializer = serializer;
        }

        @Override
        Object lookup(K key) {
            return stored(key);
        }

        @Override
        Object stored(K key) {
            long size = serializer.size(key);
            if (size < 0 || size > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException("key serializer gave a size out of range: " + size);
            }
            byte[] bytes = new byte[(int) size];
            serializer.write(key, MemorySegment.ofArray(bytes));
            return new KeyBytes(bytes);
        }

        @Override
        K userKey(Object indexKey) {
            return serializer.read(MemorySegment.ofArray(((KeyBytes) indexKey).bytes));
        }

        @Override
        long chargedBytes(Object indexKey) {
            return OBJECT_KEY_BYTES + ((KeyBytes) indexKey).bytes.length;
        }
    }

    /** A key's bytes, compared by content. */
    static final class KeyBytes {
        final byte[] bytes;
        private final int hash;

        KeyBytes(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof KeyBytes k && k.hash == hash && Arrays.equals(k.bytes, bytes);
        }
    }
}
