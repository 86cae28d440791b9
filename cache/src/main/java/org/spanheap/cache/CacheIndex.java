package org.spanheap.cache;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * The cache's index: keys to value handles, in {@link IndexSegment}s that each
 * run W-TinyLFU over their entries under their own lock, so threads touching
 * different segments never wait for each other (OHC's layout, with Caffeine's
 * policy per segment).
 *
 * <p><b>The byte bound.</b> Each segment aims at an equal share of the
 * capacity and evicts its own entries beyond it. An entry larger than a share
 * (up to the whole capacity) is allowed: then the index evicts from other
 * segments, one entry at a time under each one's lock (never two locks at
 * once), until the sum of all charges is within the capacity again. So the
 * capacity holds when every write returns, as long as no other write is
 * still running.
 *
 * <p>Every method that removes entries reports them in a {@link Removals};
 * the caller frees their handles after the segment's lock is released.
 */
final class CacheIndex {

    /** A segment's share is at least this, so its window and queues hold a few entries of any common size. */
    private static final long MIN_SHARE = 256 << 10;

    private final IndexSegment[] segments;
    private final int shift;
    /** The bound on the sum of the charges; changed by {@link #setCapacity}. */
    private volatile long capacity;
    /** The sum of every segment's charge (each changes it under its own lock, by what it added or removed). */
    private final AtomicLong charged = new AtomicLong();
    /**
     * Lookups and their outcome, for the whole index: a lookup touches one striped counter whose
     * cell stays in its core's cache, where one counter per segment put a cold line or two on
     * every lookup.
     */
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    /** Where the search for a segment to evict from starts (racy: only spreads the evictions). */
    private int cursor;

    /** @param longKeys whether every key is a {@code Long} (see {@link IndexSegment}) */
    CacheIndex(long capacity, boolean longKeys, Expiry expiry) {
        int wanted = Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors() * 8));
        int n = 1;
        while (n < Math.min(64, wanted) && capacity / (n * 2L) >= MIN_SHARE) {
            n *= 2;
        }
        this.capacity = capacity;
        this.segments = new IndexSegment[n];
        for (int i = 0; i < n; i++) {
            segments[i] = new IndexSegment(shareOf(capacity, i, n), longKeys, expiry);
        }
        this.shift = 32 - Integer.numberOfTrailingZeros(n);
    }

    /** {@return segment {@code i}'s share of {@code capacity} among {@code n}} The shares add up to it exactly. */
    private static long shareOf(long capacity, int i, int n) {
        return capacity / n + (i < capacity % n ? 1 : 0);
    }

    /** {@return the bound on the sum of the charges} */
    long capacity() {
        return capacity;
    }

    /**
     * Changes the capacity: each segment gets its new share and evicts what
     * no longer fits it (under its lock, one segment at a time), then entries
     * are evicted anywhere until the sum is within the new capacity. Writes
     * that run meanwhile evict down to whichever bound they read; {@link #put}
     * reads it under the segment's lock, and an entry that alone exceeds it
     * (its caller checked an older, larger one) is reported evicted and never
     * stored, while the value it replaces leaves as replaced. The number of
     * segments stays what the first capacity made it.
     */
    synchronized void setCapacity(long newCapacity, long now, Removals out) {
        capacity = newCapacity;
        int n = segments.length;
        for (int i = 0; i < n; i++) {
            IndexSegment s = segments[i];
            lock(s);
            try {
                long before = s.charged();
                s.resize(shareOf(newCapacity, i, n), now, out);
                addCharge(s.charged() - before);
            } finally {
                s.lock.unlock();
            }
        }
        while (charged.get() > capacity && evictElsewhere(null, 0, now, out)) {
            // entries larger than a share
        }
    }

    /** Tries to take a busy segment's lock this many times, spinning, before waiting in the lock's queue. */
    private static final int SPINS = 64;

    /**
     * Takes the segment's lock, spinning a little first: a segment is held for
     * a few hundred nanoseconds, far less than parking and waking a thread
     * costs (with popular keys, parking put a tenth of a 2-thread run's time in
     * the kernel's scheduler: docs/cache.md).
     */
    private static void lock(IndexSegment s) {
        ReentrantLock l = s.lock;
        if (l.tryLock()) {
            return;
        }
        for (int i = 0; i < SPINS; i++) {
            Thread.onSpinWait();
            if (!l.isLocked() && l.tryLock()) {
                return;
            }
        }
        l.lock();
    }

    /** {@return a well-mixed hash of an index key} Segments take its high bits, tables its low bits. */
    static int hash(Object key) {
        return mix(key.hashCode());
    }

    /** {@return {@link #hash(Object)} of a {@code Long} key, without the box} Entries of long keys keep no hash. */
    static int hash(long key) {
        return mix(Long.hashCode(key));
    }

    private static int mix(int hashCode) {
        int h = hashCode * 0x9E37_79B9;
        return h ^ (h >>> 15);
    }

    private IndexSegment segmentOf(int hash) {
        return shift == 32 ? segments[0] : segments[hash >>> shift];
    }

    /**
     * {@return the handle stored for {@code key}, 0 if none} A hit counts as an access for
     * the policy; the statistics count a lookup through {@link #recordLookup}, once per
     * call of the cache, however many times the call looked.
     */
    long lookup(Object key, int hash, long now) {
        IndexSegment s = segmentOf(hash);
        long handle = s.lookupWithoutLock(key, hash, now);
        if (handle == IndexSegment.RETRY) {
            lock(s);
            try {
                handle = s.lookup(key, hash, now);
            } finally {
                s.lock.unlock();
            }
        }
        return handle;
    }

    /** Counts one lookup of the cache's, a hit or a miss. */
    void recordLookup(boolean hit) {
        (hit ? hits : misses).increment();
    }

    boolean contains(Object key, int hash, long now) {
        IndexSegment s = segmentOf(hash);
        lock(s);
        try {
            return s.contains(key, hash, now);
        } finally {
            s.lock.unlock();
        }
    }

    /**
     * Stores {@code handle} for {@code key} (see {@link IndexSegment#put}), then
     * evicts until the capacity holds. {@return with {@code onlyIfAbsent}, the
     * handle already there (the new one was not stored), else 0}
     */
    long put(Object key, int hash, long handle, int charge, long now, long deadline, boolean onlyIfAbsent, Removals out) {
        IndexSegment s = segmentOf(hash);
        long present;
        lock(s);
        try {
            present = store(s, key, hash, handle, charge, now, deadline, onlyIfAbsent, out);
        } finally {
            s.lock.unlock();
        }
        makeRoom(key, hash, now, out);
        return present;
    }

    /**
     * Stores {@code handle} for {@code key} as {@link #put} does, if {@code key} has an
     * unexpired entry whose handle {@code current} accepts (tested under the segment's lock,
     * so no write of the key comes between the test and the store). {@return whether it
     * was stored}
     */
    boolean replaceIf(Object key, int hash, LongPredicate current, long handle, int charge, long now, long deadline,
            Removals out) {
        IndexSegment s = segmentOf(hash);
        lock(s);
        try {
            if (!s.contains(key, hash, now) || !current.test(s.handleOf(key, hash))) {
                return false;
            }
            store(s, key, hash, handle, charge, now, deadline, false, out);
        } finally {
            s.lock.unlock();
        }
        makeRoom(key, hash, now, out);
        return true;
    }

    /** The store of {@link #put} in its segment {@code s}, whose lock the caller holds. */
    private long store(IndexSegment s, Object key, int hash, long handle, int charge, long now, long deadline,
            boolean onlyIfAbsent, Removals out) {
        if (charge > capacity) {
            // checked by the caller against a capacity setCapacity has lowered since: it cannot fit
            if (onlyIfAbsent && s.contains(key, hash, now)) {
                return s.handleOf(key, hash);
            }
            long before = s.charged();
            s.remove(key, hash, RemovalCause.REPLACED, out); // a put replaces: the old value does not stay
            addCharge(s.charged() - before);
            out.add(out.keysWanted ? key : null, handle, RemovalCause.SIZE);
            return 0;
        }
        long before = s.charged();
        long present = s.put(key, hash, handle, charge, now, deadline, onlyIfAbsent, out);
        addCharge(s.charged() - before);
        return present;
    }

    /** After a store: evicts elsewhere while the sum is over the capacity. */
    private void makeRoom(Object key, int hash, long now, Removals out) {
        while (charged.get() > capacity && evictElsewhere(key, hash, now, out)) {
            // an entry larger than its segment's share: others make room
        }
    }

    /** Evicts one entry (not {@code key}'s) from a segment over its share, else from any. */
    private boolean evictElsewhere(Object key, int hash, long now, Removals out) {
        int n = segments.length;
        int start = cursor;
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k < n; k++) {
                IndexSegment s = segments[(start + k) & (n - 1)];
                if (pass == 0 ? s.charged() <= s.share : s.count() == 0) { // racy reads: hints, rechecked below
                    continue;
                }
                lock(s);
                try {
                    long before = s.charged();
                    if (s.evictOneExcept(key, hash, now, out)) {
                        addCharge(s.charged() - before);
                        cursor = start + k + 1;
                        return true;
                    }
                } finally {
                    s.lock.unlock();
                }
            }
        }
        return false;
    }

    boolean remove(Object key, int hash, Removals out) {
        IndexSegment s = segmentOf(hash);
        lock(s);
        try {
            long before = s.charged();
            boolean removed = s.remove(key, hash, out);
            addCharge(s.charged() - before);
            return removed;
        } finally {
            s.lock.unlock();
        }
    }

    /** Removes every entry (explicit), or with {@code expiredOnly} every expired one. */
    void removeAll(boolean expiredOnly, long now, Removals out) {
        for (IndexSegment s : segments) {
            lock(s);
            try {
                long before = s.charged();
                if (expiredOnly) {
                    s.expireAll(now, out);
                } else {
                    s.clear(out);
                }
                addCharge(s.charged() - before);
            } finally {
                s.lock.unlock();
            }
        }
    }

    /**
     * Runs {@code action} on the key of every unexpired entry, segment by
     * segment: a segment's keys are copied under its lock, which is released
     * before the action runs on them, so the action may use the cache. A key
     * present throughout is seen once; one added or removed meanwhile may or
     * may not be. {@code now} is read once per segment.
     */
    void forEachKey(LongSupplier now, Consumer<Object> action) {
        List<Object> keys = new ArrayList<>();
        for (IndexSegment s : segments) {
            keys.clear();
            lock(s);
            try {
                s.collectKeys(now.getAsLong(), keys);
            } finally {
                s.lock.unlock();
            }
            for (Object k : keys) {
                action.accept(k);
            }
        }
    }

    /**
     * {@return the keys of at most {@code n} unexpired entries with the highest frequency
     * estimates, the highest first} Each segment is read under its lock in turn, with
     * {@code now} read once per segment; each segment's sketch ages on its own, so the
     * estimates of two segments compare only roughly.
     */
    List<Object> hotKeys(LongSupplier now, int n) {
        if (n == 0) {
            return new ArrayList<>();
        }
        HotKeys hot = new HotKeys(n);
        for (IndexSegment s : segments) {
            lock(s);
            try {
                s.collectHot(now.getAsLong(), hot);
            } finally {
                s.lock.unlock();
            }
        }
        return hot.hottestFirst();
    }

    /**
     * Adds a segment's change to the sum. A replace by a value of the same charge, the common
     * write of a cache at its bound, changes nothing and leaves the shared counter's line alone.
     */
    private void addCharge(long delta) {
        if (delta != 0) {
            charged.addAndGet(delta);
        }
    }

    /** {@return the sum of the entries' charges} */
    long charged() {
        return charged.get();
    }

    /** {@return entries (summed over the segments, each read under its lock), hits and misses} */
    long[] counts() {
        long entries = 0;
        for (IndexSegment s : segments) {
            lock(s);
            try {
                entries += s.count();
            } finally {
                s.lock.unlock();
            }
        }
        return new long[] {entries, hits.sum(), misses.sum()};
    }

    int segmentCount() {
        return segments.length;
    }
}
