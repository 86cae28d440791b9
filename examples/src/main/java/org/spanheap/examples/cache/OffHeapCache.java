package org.spanheap.examples.cache;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A concurrent, memory-bounded {@code byte[] key -> bytes} cache whose entries live off-heap
 * in an {@link EntryStore}, evicting with CLOCK (second chance).
 *
 * <p>The index is split into shards (by the key's hash), each an open-addressing table that
 * holds, per slot, only the entry's reference (a {@code long}: a compacting-heap handle or a
 * {@code malloc} address), the key's hash, the entry's size and a CLOCK bit. Keys and values
 * are both stored off-heap; there is no Java object per entry. Because the index names
 * entries by handle, a {@link CompactingEntryStore} can move entries (compaction) without
 * the cache noticing.
 *
 * <p><b>Memory bound.</b> Each shard may hold {@code maxBytes / shards} bytes of entries
 * (header + key + value). A put that would exceed it first evicts entries of its shard:
 * the CLOCK hand skips (and clears) entries read since it last passed, and evicts the first
 * one not read. The bound counts entry bytes, not the allocator's overhead: what the store
 * commits beyond it is exactly what the demo measures.
 *
 * <p><b>Thread safety.</b> All methods may be called from any thread. A shard's lock is held
 * while its index is searched or changed, and while a value is copied out (so an entry is
 * never freed during a read). Entries are allocated and written before the lock is taken,
 * and replaced or evicted entries are freed after it is released, so the store's own
 * allocation cost is not paid under the lock (the memory bound can therefore be exceeded
 * briefly by the entries being put at that moment).
 *
 * {@snippet :
 * try (OffHeapCache cache = new OffHeapCache(CompactingEntryStore.create(2), 64 << 20, 64)) {
 *     cache.put("k".getBytes(), "value".getBytes());
 *     byte[] v = cache.get("k".getBytes());          // "value", or null once evicted
 * }
 * }
 */
public final class OffHeapCache implements AutoCloseable {

    private final EntryStore store;
    private final Shard[] shards;
    private final int shardShift;
    private final long shardBytes;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private volatile boolean closed;

    /**
     * Creates a cache that takes ownership of {@code store} (closing the cache closes it).
     *
     * @param store    where entries live
     * @param maxBytes the memory bound: entry bytes (header + key + value) at most
     * @param shards   number of index shards, a power of two (more shards, less contention)
     * @throws IllegalArgumentException if {@code shards} is not a power of two, or
     *                                  {@code maxBytes < shards}
     */
    public OffHeapCache(EntryStore store, long maxBytes, int shards) {
        if (shards < 1 || Integer.bitCount(shards) != 1) {
            throw new IllegalArgumentException("shards must be a power of two: " + shards);
        }
        if (maxBytes < shards) {
            throw new IllegalArgumentException("maxBytes too small: " + maxBytes);
        }
        this.store = store;
        this.shards = new Shard[shards];
        for (int i = 0; i < shards; i++) {
            this.shards[i] = new Shard();
        }
        this.shardShift = 32 - Integer.numberOfTrailingZeros(shards);
        this.shardBytes = maxBytes / shards;
    }

    /** {@return the store the entries live in} */
    public EntryStore store() {
        return store;
    }

    /** {@return the largest entry (header + key + value) a put accepts} */
    public long maxEntryBytes() {
        return Math.min(shardBytes, store.maxEntryBytes());
    }

    private static int hash(byte[] key) {
        int h = Arrays.hashCode(key);
        h ^= h >>> 16; // murmur3's finalizer: spreads the bits for both shard and slot
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        return h ^ (h >>> 16);
    }

    private Shard shard(int hash) {
        return shards[shardShift == 32 ? 0 : hash >>> shardShift];
    }

    /**
     * Maps {@code key} to a copy of {@code value}, replacing any previous value.
     *
     * @throws IllegalArgumentException if the entry is larger than {@link #maxEntryBytes()}
     * @throws OutOfMemoryError if the store has no memory for it
     */
    public void put(byte[] key, byte[] value) {
        put(key, MemorySegment.ofArray(value));
    }

    /**
     * Maps {@code key} to a copy of the bytes of {@code value} (a heap or native segment).
     *
     * @throws IllegalArgumentException if the entry is larger than {@link #maxEntryBytes()}
     * @throws OutOfMemoryError if the store has no memory for it
     */
    public void put(byte[] key, MemorySegment value) {
        long size = EntryStore.entryBytes(key.length, value.byteSize());
        if (size > maxEntryBytes()) {
            throw new IllegalArgumentException("entry of " + size + " bytes is larger than " + maxEntryBytes());
        }
        ensureOpen();
        int hash = hash(key);
        long ref = store.store(key, value);
        long[] garbage;
        Shard s = shard(hash);
        s.lock.lock();
        try {
            if (closed) {
                store.free(ref);
                throw new IllegalStateException("cache is closed");
            }
            garbage = s.put(key, hash, ref, (int) size);
        } finally {
            s.lock.unlock();
        }
        for (int i = 1; i <= (int) garbage[0]; i++) {
            store.free(garbage[i]);
        }
    }

    /** {@return a copy of the value of {@code key}, or null if it is not cached} */
    public byte[] get(byte[] key) {
        int hash = hash(key);
        Shard s = shard(hash);
        s.lock.lock();
        try {
            int i = lookup(s, key, hash);
            return i < 0 ? null : store.value(s.refs[i]);
        } finally {
            s.lock.unlock();
        }
    }

    /**
     * Copies the value of {@code key} into {@code dst} if it fits, without allocating.
     *
     * @return the value's length (the bytes were copied if it is at most
     *         {@code dst.byteSize()}), or -1 if the key is not cached
     */
    public int get(byte[] key, MemorySegment dst) {
        int hash = hash(key);
        Shard s = shard(hash);
        s.lock.lock();
        try {
            int i = lookup(s, key, hash);
            return i < 0 ? -1 : store.copyValue(s.refs[i], dst);
        } finally {
            s.lock.unlock();
        }
    }

    /**
     * The read path shared by both {@code get}s, with the shard's lock held: counts the hit
     * or miss and marks a hit recently used. {@return the key's slot in the shard, or -1}
     */
    private int lookup(Shard s, byte[] key, int hash) {
        ensureOpen();
        int i = s.find(key, hash);
        if (i < 0) {
            misses.increment();
            return -1;
        }
        hits.increment();
        s.clock[i] = 1;
        return i;
    }

    /** Removes {@code key}; returns whether it was cached. */
    public boolean remove(byte[] key) {
        int hash = hash(key);
        Shard s = shard(hash);
        long ref;
        s.lock.lock();
        try {
            ensureOpen();
            int i = s.find(key, hash);
            if (i < 0) {
                return false;
            }
            ref = s.refs[i];
            s.removeAt(i);
        } finally {
            s.lock.unlock();
        }
        store.free(ref);
        return true;
    }

    /** {@return counters and sizes now (summed shard by shard, not an atomic snapshot)} */
    public Stats stats() {
        long entries = 0;
        long bytes = 0;
        for (Shard s : shards) {
            s.lock.lock();
            try {
                entries += s.size;
                bytes += s.bytes;
            } finally {
                s.lock.unlock();
            }
        }
        return new Stats(entries, bytes, shardBytes * shards.length, hits.sum(), misses.sum(), evictions.sum());
    }

    /**
     * Cache statistics.
     *
     * @param entries   entries cached
     * @param bytes     bytes of those entries (header + key + value): the "live" bytes
     * @param maxBytes  the memory bound
     * @param hits      gets that found their key
     * @param misses    gets that did not
     * @param evictions entries evicted to keep the bound
     */
    public record Stats(long entries, long bytes, long maxBytes, long hits, long misses, long evictions) {
        /** {@return hits / (hits + misses), 0 before any get} */
        public double hitRatio() {
            long n = hits + misses;
            return n == 0 ? 0 : (double) hits / n;
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("cache is closed");
        }
    }

    /** Frees every entry and closes the store. Calls racing with close throw {@link IllegalStateException}. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Shard s : shards) {
            s.lock.lock();
            try {
                for (int i = 0; i < s.refs.length; i++) {
                    if (s.refs[i] != 0) {
                        store.free(s.refs[i]);
                        s.refs[i] = 0;
                    }
                }
                s.size = 0;
                s.bytes = 0;
            } finally {
                s.lock.unlock();
            }
        }
        store.close();
    }

    /**
     * One shard: a linear-probing table (deletion by backward shift, no tombstones) with
     * parallel arrays; a slot is empty when its reference is 0. Guarded by {@code lock}.
     */
    private final class Shard {
        final ReentrantLock lock = new ReentrantLock();
        long[] refs = new long[64];
        int[] hashes = new int[64];
        int[] sizes = new int[64];
        byte[] clock = new byte[64];
        int size;
        long bytes;
        int hand;
        /** Entries to free once the lock is released: [count, ref...]; reused. */
        long[] garbage = new long[8];

        /** Index of the key's slot, or {@code -(empty slot) - 1}. */
        int find(byte[] key, int hash) {
            int mask = refs.length - 1;
            for (int i = hash & mask; ; i = (i + 1) & mask) {
                long r = refs[i];
                if (r == 0) {
                    return -i - 1;
                }
                if (hashes[i] == hash && store.keyEquals(r, key)) {
                    return i;
                }
            }
        }

        /** Inserts or replaces; returns the entries to free (a copy, safe to use unlocked). */
        long[] put(byte[] key, int hash, long ref, int entrySize) {
            garbage[0] = 0;
            int i = find(key, hash);
            if (i >= 0) {
                addGarbage(refs[i]);
                removeAt(i);
            }
            while (size > 0 && bytes + entrySize > shardBytes) {
                evictOne();
            }
            if ((size + 1) * 4L > refs.length * 3L) { // load factor 0.75
                grow();
            }
            i = -find(key, hash) - 1;
            refs[i] = ref;
            hashes[i] = hash;
            sizes[i] = entrySize;
            clock[i] = 0; // a new entry gets no second chance until it is read
            size++;
            bytes += entrySize;
            return Arrays.copyOf(garbage, (int) garbage[0] + 1);
        }

        private void addGarbage(long ref) {
            int n = (int) garbage[0] + 1;
            if (n == garbage.length) {
                garbage = Arrays.copyOf(garbage, n * 2);
            }
            garbage[n] = ref;
            garbage[0] = n;
        }

        private void evictOne() {
            int mask = refs.length - 1;
            for (;;) {
                hand = (hand + 1) & mask;
                if (refs[hand] == 0) {
                    continue;
                }
                if (clock[hand] != 0) {
                    clock[hand] = 0;
                    continue;
                }
                addGarbage(refs[hand]);
                removeAt(hand);
                hand = (hand - 1) & mask; // the slot may now hold a shifted entry: look at it again
                evictions.increment();
                return;
            }
        }

        /** Empties slot {@code i}, shifting later entries of its probe run back. */
        void removeAt(int i) {
            bytes -= sizes[i];
            size--;
            int mask = refs.length - 1;
            int j = i;
            for (;;) {
                j = (j + 1) & mask;
                if (refs[j] == 0) {
                    break;
                }
                int home = hashes[j] & mask;
                boolean staysPut = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (!staysPut) {
                    refs[i] = refs[j];
                    hashes[i] = hashes[j];
                    sizes[i] = sizes[j];
                    clock[i] = clock[j];
                    i = j;
                }
            }
            refs[i] = 0;
            clock[i] = 0;
        }

        private void grow() {
            long[] oldRefs = refs;
            int[] oldHashes = hashes;
            int[] oldSizes = sizes;
            byte[] oldClock = clock;
            int n = oldRefs.length * 2;
            refs = new long[n];
            hashes = new int[n];
            sizes = new int[n];
            clock = new byte[n];
            int mask = n - 1;
            for (int k = 0; k < oldRefs.length; k++) {
                if (oldRefs[k] != 0) {
                    int i = oldHashes[k] & mask;
                    while (refs[i] != 0) {
                        i = (i + 1) & mask;
                    }
                    refs[i] = oldRefs[k];
                    hashes[i] = oldHashes[k];
                    sizes[i] = oldSizes[k];
                    clock[i] = oldClock[k];
                }
            }
            hand = hand & mask;
        }
    }
}
