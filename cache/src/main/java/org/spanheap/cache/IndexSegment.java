package org.spanheap.cache;

import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One stripe of the cache's index: a hash table from keys to value handles,
 * and the W-TinyLFU policy over its entries (Einziger, Friedman and Manes,
 * "TinyLFU: A Highly Efficient Cache Admission Policy"), all guarded by
 * {@link #lock}; every method but the constructor expects the caller to hold it.
 *
 * <p><b>Layout.</b> No object per entry: an entry is a slot {@code e} in
 * parallel arrays (key, hash, handle, charge, queue links, times), and the
 * hash table is open addressing with linear probing over slot numbers
 * (deletion shifts the run back, so there are no tombstones). That is what
 * lets the cache charge an entry about a third of what a node-based map costs.
 *
 * <p><b>Policy.</b> New entries enter the window, an LRU queue of about 1% of
 * the segment's share; what overflows it moves to the probation queue as a
 * <i>candidate</i>. A hit in probation promotes an entry to the protected
 * queue (at most 80% of the main region; its overflow is demoted back to
 * probation). To make room, the oldest candidate duels the probation queue's
 * least recently used entry: the one the frequency sketch has seen less often
 * is evicted. So a one-time key cannot push out a popular one.
 *
 * <p><b>Expiry</b> is checked on every lookup (an expired entry is a miss);
 * expired entries leave when the policy evicts them, when a write finds them
 * at the head of a queue, or at {@link #expireAll}.
 */
final class IndexSegment {

    static final int NONE = -1;
    private static final byte WINDOW = 0;
    private static final byte PROBATION = 1;
    private static final byte PROTECTED = 2;
    /** The queue of a slot that holds no entry. */
    private static final byte FREE = 3;
    private static final int INITIAL_SLOTS = 16;
    /** Expired entries a write removes from the heads of the queues, at most. */
    private static final int SWEEP = 4;

    final ReentrantLock lock = new ReentrantLock();
    /** The part of the capacity this segment aims at; the index keeps the sum of all weights within the capacity. */
    final long share;
    private final long windowMax;
    private final long protectedMax;
    private final long expireAfterWriteNanos;
    private final long expireAfterAccessNanos;
    private final FrequencySketch sketch = new FrequencySketch();

    // ---- entries, by slot ----
    /** The keys; or, for an index of {@code Long} keys, null and the values in {@link #longKeys}. */
    private Object[] keys;
    private long[] longKeys;
    private int[] hashes = new int[INITIAL_SLOTS];
    private long[] handles = new long[INITIAL_SLOTS];
    private int[] charges = new int[INITIAL_SLOTS];
    /** Queue links; {@code next} also links the free slots. */
    private int[] prev = new int[INITIAL_SLOTS];
    private int[] next = new int[INITIAL_SLOTS];
    private byte[] queueOf = new byte[INITIAL_SLOTS];
    /** Write and access times, only when that expiry is on. */
    private long[] written;
    private long[] accessed;
    private int slotsUsed;
    private int freeSlot = NONE;
    private int count;

    /** Open addressing: slot + 1, 0 when empty; at most three quarters full. */
    private int[] table = new int[INITIAL_SLOTS * 2];

    private final int[] head = {NONE, NONE, NONE};
    private final int[] tail = {NONE, NONE, NONE};
    private final long[] queueCharge = new long[3];
    private long charged;
    /** The oldest entry moved from the window that has not dueled yet, or NONE. */
    private int candidate = NONE;

    long hits;
    long misses;

    /**
     * @param longKeys whether every key is a {@code Long}: then the keys are kept
     *        as {@code long}s (8 bytes, compared without a pointer to follow)
     */
    IndexSegment(long share, boolean longKeys, long expireAfterWriteNanos, long expireAfterAccessNanos) {
        this.share = share;
        if (longKeys) {
            this.longKeys = new long[INITIAL_SLOTS];
        } else {
            this.keys = new Object[INITIAL_SLOTS];
        }
        this.windowMax = Math.max(1, share / 100);
        this.protectedMax = (share - windowMax) * 4 / 5;
        this.expireAfterWriteNanos = expireAfterWriteNanos;
        this.expireAfterAccessNanos = expireAfterAccessNanos;
        if (expireAfterWriteNanos > 0) {
            written = new long[INITIAL_SLOTS];
        }
        if (expireAfterAccessNanos > 0) {
            accessed = new long[INITIAL_SLOTS];
        }
    }

    /** {@return the bytes the entries of this segment are charged} */
    long charged() {
        return charged;
    }

    int count() {
        return count;
    }

    // ---- lookups -------------------------------------------------------

    /**
     * {@return the handle stored for {@code key}, or 0 if there is none or it
     * expired} A hit counts as an access for the policy and for expiry.
     */
    long lookup(Object key, int hash, long now) {
        int e = find(key, hash);
        if (e == NONE || expired(e, now)) {
            misses++;
            return 0;
        }
        hits++;
        onAccess(e, now);
        return handles[e];
    }

    /** Whether {@code key} has an entry that has not expired; not an access. */
    boolean contains(Object key, int hash, long now) {
        int e = find(key, hash);
        return e != NONE && !expired(e, now);
    }

    // ---- writes --------------------------------------------------------

    /**
     * Stores {@code handle} for {@code key}. If an unexpired entry is there:
     * with {@code onlyIfAbsent} leaves it and returns its handle; else replaces
     * its handle (the old one goes to {@code out} as replaced) and returns 0.
     * Without an entry, adds one to the window and returns 0. Then makes room
     * within this segment's share, never evicting this key's entry.
     */
    long put(Object key, int hash, long handle, int charge, long now, boolean onlyIfAbsent, Removals out) {
        sweepExpired(now, out);
        int e = find(key, hash);
        if (e != NONE && expired(e, now)) {
            remove(e, RemovalCause.EXPIRED, out);
            e = NONE;
        }
        if (e != NONE) {
            if (onlyIfAbsent) {
                onAccess(e, now);
                return handles[e];
            }
            out.add(keyAt(e), handles[e], RemovalCause.REPLACED);
            handles[e] = handle;
            int delta = charge - charges[e];
            charges[e] = charge;
            queueCharge[queueOf[e]] += delta;
            charged += delta;
            if (written != null) {
                written[e] = now;
            }
            onAccess(e, now);
        } else {
            e = insert(key, hash, handle, charge, now);
        }
        admitFromWindow(e);
        while (charged > share && evictOne(e, now, out)) {
            // the duel of candidates and victims, until the share holds (or only this key is left)
        }
        return 0;
    }

    /** Removes {@code key}'s entry; {@return whether one was there (expired or not)} */
    boolean remove(Object key, int hash, Removals out) {
        int e = find(key, hash);
        if (e == NONE) {
            return false;
        }
        remove(e, RemovalCause.EXPLICIT, out);
        return true;
    }

    /** Removes every entry, as explicit removals. */
    void clear(Removals out) {
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf[e] != FREE) {
                out.add(keyAt(e), handles[e], RemovalCause.EXPLICIT);
            }
        }
        if (keys != null) {
            Arrays.fill(keys, null);
        }
        Arrays.fill(queueOf, FREE);
        Arrays.fill(table, 0);
        Arrays.fill(head, NONE);
        Arrays.fill(tail, NONE);
        Arrays.fill(queueCharge, 0);
        charged = 0;
        count = 0;
        slotsUsed = 0;
        freeSlot = NONE;
        candidate = NONE;
    }

    /** Removes every expired entry. */
    void expireAll(long now, Removals out) {
        if (written == null && accessed == null) {
            return;
        }
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf[e] != FREE && expired(e, now)) {
                remove(e, RemovalCause.EXPIRED, out);
            }
        }
    }

    /**
     * Evicts one entry other than {@code key}'s (the policy's choice; an
     * expired one goes as expired). {@return false if there was none to evict}
     */
    boolean evictOneExcept(Object key, int hash, long now, Removals out) {
        return evictOne(find(key, hash), now, out);
    }

    private boolean evictOne(int keep, long now, Removals out) {
        int victim = head[PROBATION];
        int chosen;
        if (candidate != NONE && victim != NONE && victim != candidate) {
            chosen = sketch.frequency(hashes[candidate]) > sketch.frequency(hashes[victim]) ? victim : candidate;
        } else if (victim != NONE) {
            chosen = victim;
        } else if (head[PROTECTED] != NONE) {
            chosen = head[PROTECTED];
        } else {
            chosen = head[WINDOW];
        }
        if (chosen != NONE && chosen == keep) {
            chosen = otherThan(keep);
        }
        if (chosen == NONE) {
            return false;
        }
        if (chosen != candidate && candidate != NONE && chosen == victim) {
            candidate = next[candidate]; // the candidate won its duel: admitted, the next one duels next time
        }
        remove(chosen, expired(chosen, now) ? RemovalCause.EXPIRED : RemovalCause.SIZE, out);
        return true;
    }

    /** The entry after {@code e} in its queue, else the head of another queue; NONE if {@code e} is alone. */
    private int otherThan(int e) {
        if (next[e] != NONE) {
            return next[e];
        }
        for (int q = WINDOW; q <= PROTECTED; q++) {
            if (head[q] != NONE && head[q] != e) {
                return head[q];
            }
        }
        return NONE;
    }

    // ---- policy --------------------------------------------------------

    private void onAccess(int e, long now) {
        sketch.increment(hashes[e]);
        if (accessed != null) {
            accessed[e] = now;
        }
        switch (queueOf[e]) {
            case WINDOW -> moveToTail(e, WINDOW);
            case PROBATION -> {
                moveToTail(e, PROTECTED);
                while (queueCharge[PROTECTED] > protectedMax && head[PROTECTED] != e) {
                    moveToTail(head[PROTECTED], PROBATION);
                }
            }
            default -> moveToTail(e, PROTECTED);
        }
    }

    /** Moves the window's overflow (oldest first, never {@code keep}) to probation as candidates. */
    private void admitFromWindow(int keep) {
        while (queueCharge[WINDOW] > windowMax && head[WINDOW] != NONE && head[WINDOW] != keep) {
            int c = head[WINDOW];
            moveToTail(c, PROBATION);
            if (candidate == NONE) {
                candidate = c;
            }
        }
    }

    private void sweepExpired(long now, Removals out) {
        if (written == null && accessed == null) {
            return;
        }
        for (int n = 0; n < SWEEP; n++) {
            int e = NONE;
            for (int q = WINDOW; q <= PROTECTED && e == NONE; q++) {
                if (head[q] != NONE && expired(head[q], now)) {
                    e = head[q];
                }
            }
            if (e == NONE) {
                return;
            }
            remove(e, RemovalCause.EXPIRED, out);
        }
    }

    private boolean expired(int e, long now) {
        return (written != null && now - written[e] >= expireAfterWriteNanos)
                || (accessed != null && now - accessed[e] >= expireAfterAccessNanos);
    }

    // ---- queues --------------------------------------------------------

    private void moveToTail(int e, byte q) {
        unlink(e);
        link(e, q);
    }

    private void link(int e, byte q) {
        queueOf[e] = q;
        prev[e] = tail[q];
        next[e] = NONE;
        if (tail[q] == NONE) {
            head[q] = e;
        } else {
            next[tail[q]] = e;
        }
        tail[q] = e;
        queueCharge[q] += charges[e];
    }

    private void unlink(int e) {
        byte q = queueOf[e];
        if (e == candidate) {
            candidate = next[e]; // the next candidate, or an entry behind it in probation (NONE at the end)
        }
        int p = prev[e];
        int n = next[e];
        if (p == NONE) {
            head[q] = n;
        } else {
            next[p] = n;
        }
        if (n == NONE) {
            tail[q] = p;
        } else {
            prev[n] = p;
        }
        queueCharge[q] -= charges[e];
    }

    // ---- entries and the hash table -------------------------------------

    private Object keyAt(int e) {
        return keys != null ? keys[e] : Long.valueOf(longKeys[e]);
    }

    private int find(Object key, int hash) {
        int mask = table.length - 1;
        for (int i = hash & mask; ; i = (i + 1) & mask) {
            int s = table[i];
            if (s == 0) {
                return NONE;
            }
            int e = s - 1;
            if (hashes[e] == hash && (keys != null ? key.equals(keys[e]) : (Long) key == longKeys[e])) {
                return e;
            }
        }
    }

    private int insert(Object key, int hash, long handle, int charge, long now) {
        if ((count + 1) * 4L > table.length * 3L) {
            rehash(table.length * 2);
        }
        int e = freeSlot;
        if (e != NONE) {
            freeSlot = next[e];
        } else {
            if (slotsUsed == handles.length) {
                growSlots(handles.length + (handles.length >> 1)); // by half: the slack is charged to every entry
            }
            e = slotsUsed++;
        }
        if (keys != null) {
            keys[e] = key;
        } else {
            longKeys[e] = (Long) key;
        }
        hashes[e] = hash;
        handles[e] = handle;
        charges[e] = charge;
        if (written != null) {
            written[e] = now;
        }
        if (accessed != null) {
            accessed[e] = now;
        }
        int mask = table.length - 1;
        int i = hash & mask;
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = e + 1;
        count++;
        charged += charge;
        link(e, WINDOW);
        sketch.increment(hash);
        sketch.ensureCapacity(count);
        return e;
    }

    private void remove(int e, RemovalCause cause, Removals out) {
        out.add(keyAt(e), handles[e], cause);
        unlink(e);
        charged -= charges[e];
        count--;
        deleteFromTable(e);
        if (keys != null) {
            keys[e] = null; // not kept reachable
        }
        queueOf[e] = FREE;
        next[e] = freeSlot;
        freeSlot = e;
    }

    /** Linear probing's deletion: empties the entry's cell and shifts back what probed past it. */
    private void deleteFromTable(int e) {
        int mask = table.length - 1;
        int i = hashes[e] & mask;
        while (table[i] != e + 1) {
            i = (i + 1) & mask;
        }
        for (int j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
            int home = hashes[table[j] - 1] & mask;
            // the entry at j may move to i only if its home is not cyclically within (i, j]
            boolean homeBetween = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!homeBetween) {
                table[i] = table[j];
                i = j;
            }
        }
        table[i] = 0;
    }

    private void rehash(int length) {
        int[] t = new int[length];
        int mask = length - 1;
        for (int s : table) {
            if (s != 0) {
                int i = hashes[s - 1] & mask;
                while (t[i] != 0) {
                    i = (i + 1) & mask;
                }
                t[i] = s;
            }
        }
        table = t;
    }

    private void growSlots(int n) {
        if (keys != null) {
            keys = Arrays.copyOf(keys, n);
        } else {
            longKeys = Arrays.copyOf(longKeys, n);
        }
        hashes = Arrays.copyOf(hashes, n);
        handles = Arrays.copyOf(handles, n);
        charges = Arrays.copyOf(charges, n);
        prev = Arrays.copyOf(prev, n);
        next = Arrays.copyOf(next, n);
        queueOf = Arrays.copyOf(queueOf, n);
        if (written != null) {
            written = Arrays.copyOf(written, n);
        }
        if (accessed != null) {
            accessed = Arrays.copyOf(accessed, n);
        }
    }

    /** Entries that left the index, to be told to the listener and freed once the segment's lock is released. */
    static final class Removals {
        /** Made on the first removal: most writes remove nothing. */
        private Object[] keys;
        private long[] handles;
        private RemovalCause[] causes;
        private int size;

        void add(Object key, long handle, RemovalCause cause) {
            if (keys == null) {
                keys = new Object[4];
                handles = new long[4];
                causes = new RemovalCause[4];
            } else if (size == keys.length) {
                keys = Arrays.copyOf(keys, size * 2);
                handles = Arrays.copyOf(handles, size * 2);
                causes = Arrays.copyOf(causes, size * 2);
            }
            keys[size] = key;
            handles[size] = handle;
            causes[size] = cause;
            size++;
        }

        int size() {
            return size;
        }

        Object key(int i) {
            return keys[i];
        }

        long handle(int i) {
            return handles[i];
        }

        RemovalCause cause(int i) {
            return causes[i];
        }
    }
}
