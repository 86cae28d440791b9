package org.spanheap.examples.cache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Where an {@link OffHeapCache} keeps its entries: off-heap blocks named by a {@code long}
 * reference (a {@link org.spanheap.CompactingHeap} handle, or a {@code malloc} address).
 *
 * <p>An entry is laid out as {@code [int keyLength][int valueLength][key][value]}. The cache
 * keeps nothing but the reference (and the key's hash) on the Java heap.
 *
 * <p>Implementations are thread-safe. The cache guarantees that an entry is not read after
 * it was freed (it removes the entry from its index, under the index lock, before freeing).
 */
public interface EntryStore extends AutoCloseable {

    /** Bytes of the entry header (key and value lengths). */
    int HEADER = 8;

    /** Layout of the two header ints (unaligned: the store decides the block's alignment). */
    ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;

    /** {@return a short name for reports} */
    String name();

    /** {@return the largest entry ({@link #HEADER} + key + value) this store takes} */
    long maxEntryBytes();

    /**
     * Allocates an entry and copies the key and the value into it.
     *
     * @return the entry's reference, never 0
     * @throws OutOfMemoryError if there is no memory for it
     */
    long store(byte[] key, MemorySegment value);

    /** {@return whether the entry's key equals {@code key}} */
    boolean keyEquals(long ref, byte[] key);

    /**
     * Copies the entry's value into {@code dst} if it fits.
     *
     * @return the value's length (copied only if {@code <= dst.byteSize()})
     */
    int copyValue(long ref, MemorySegment dst);

    /** {@return a copy of the entry's value} */
    byte[] value(long ref);

    /** Frees the entry. */
    void free(long ref);

    /** {@return the store's memory figures now} */
    Memory memory();

    /** Releases the store's memory (after the cache freed every entry). */
    @Override
    void close();

    /**
     * Memory figures of a store; -1 where the store cannot tell.
     *
     * @param committedBytes bytes the store holds from the OS or from its allocator
     * @param residentBytes  bytes of those backed by RAM
     * @param movedBytes     bytes moved by compaction so far
     */
    record Memory(long committedBytes, long residentBytes, long movedBytes) {
    }

    /** {@return the byte size of an entry with these key and value lengths} */
    static long entryBytes(int keyLength, long valueLength) {
        return HEADER + keyLength + valueLength;
    }

    /** Writes the entry's header, key and value into {@code entry} (which is large enough). */
    static void writeEntry(MemorySegment entry, byte[] key, MemorySegment value) {
        int vl = (int) value.byteSize();
        entry.set(INT, 0, key.length);
        entry.set(INT, 4, vl);
        MemorySegment.copy(key, 0, entry, ValueLayout.JAVA_BYTE, HEADER, key.length);
        MemorySegment.copy(value, 0, entry, HEADER + key.length, vl);
    }

    /** {@return whether the key stored in {@code entry} equals {@code key}} */
    static boolean keyEquals(MemorySegment entry, byte[] key) {
        if (entry.get(INT, 0) != key.length) {
            return false;
        }
        return MemorySegment.mismatch(entry, HEADER, HEADER + key.length,
                MemorySegment.ofArray(key), 0, key.length) == -1;
    }

    /** Copies the value of {@code entry} into {@code dst} if it fits; returns its length. */
    static int copyValue(MemorySegment entry, MemorySegment dst) {
        int kl = entry.get(INT, 0);
        int vl = entry.get(INT, 4);
        if (vl <= dst.byteSize()) {
            MemorySegment.copy(entry, HEADER + kl, dst, 0, vl);
        }
        return vl;
    }

    /** {@return a copy of the value of {@code entry}} */
    static byte[] value(MemorySegment entry) {
        int kl = entry.get(INT, 0);
        int vl = entry.get(INT, 4);
        byte[] v = new byte[vl];
        MemorySegment.copy(entry, ValueLayout.JAVA_BYTE, HEADER + kl, v, 0, vl);
        return v;
    }
}
