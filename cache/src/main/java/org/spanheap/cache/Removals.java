package org.spanheap.cache;

import java.util.Arrays;
import java.util.Objects;

/**
 * Entries that left the index, to be told to the listener and freed once the segment's
 * lock is released. The first two are kept in fields: a write removes at most the entry it
 * replaces and one it evicts most of the time, and the three arrays it made for them were
 * about 90 bytes per write (CacheBenchmark, 100 B values, 50% writes: 275-293 bytes
 * allocated per operation with the arrays, 247 without; OHC's run 148).
 */
final class Removals {
    /**
     * Whether the removed entries' keys are collected: only a removal listener
     * reads them, and a {@code long} key is boxed to be collected.
     */
    final boolean keysWanted;
    private Object key0, key1;
    private long handle0, handle1;
    private RemovalCause cause0, cause1;
    /** From the third removal on; made when first needed. */
    private Object[] keys;
    private long[] handles;
    private RemovalCause[] causes;
    private int size;

    /** Removals that collect the keys. */
    Removals() {
        this(true);
    }

    Removals(boolean keysWanted) {
        this.keysWanted = keysWanted;
    }

    /** @param key the entry's key, or null when {@link #keysWanted} is false */
    void add(Object key, long handle, RemovalCause cause) {
        if (size == 0) {
            key0 = key;
            handle0 = handle;
            cause0 = cause;
        } else if (size == 1) {
            key1 = key;
            handle1 = handle;
            cause1 = cause;
        } else {
            int i = size - 2;
            if (keys == null) {
                keys = new Object[4];
                handles = new long[4];
                causes = new RemovalCause[4];
            } else if (i == keys.length) {
                keys = Arrays.copyOf(keys, i * 2);
                handles = Arrays.copyOf(handles, i * 2);
                causes = Arrays.copyOf(causes, i * 2);
            }
            keys[i] = key;
            handles[i] = handle;
            causes[i] = cause;
        }
        size++;
    }

    int size() {
        return size;
    }

    Object key(int i) {
        return i == 0 ? key0 : i == 1 ? key1 : keys[checkIndex(i) - 2];
    }

    long handle(int i) {
        return i == 0 ? handle0 : i == 1 ? handle1 : handles[checkIndex(i) - 2];
    }

    RemovalCause cause(int i) {
        return i == 0 ? cause0 : i == 1 ? cause1 : causes[checkIndex(i) - 2];
    }

    private int checkIndex(int i) {
        return Objects.checkIndex(i, size);
    }
}
