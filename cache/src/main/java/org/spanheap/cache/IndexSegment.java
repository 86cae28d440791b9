package org.spanheap.cache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One stripe of the cache's index: a hash table from keys to value handles,
 * and the W-TinyLFU policy over its entries (Einziger, Friedman and Manes,
 * "TinyLFU: A Highly Efficient Cache Admission Policy"), all guarded by
 * {@link #lock}; every method but the constructor and {@link #lookupWithoutLock}
 * expects the caller to hold it.
 *
 * <p><b>Layout.</b> No object per entry: an entry is a slot {@code e}, its
 * fields packed one after the other in one {@code long[]} (handle, queue
 * links with the charge, the key when keys are longs or else the hash, expiry
 * times), so that
 * a lookup's reads of an entry fall in one or two cache lines (with parallel
 * arrays, each field would be a miss of its own). The hash
 * table is open addressing with linear probing over slot numbers, each cell
 * with eight bits of the hash beside the slot, so a probe past other keys
 * rarely touches their entries; deletion shifts the run back, so there are no
 * tombstones. That is what lets the cache charge an entry about a third of
 * what a node-based map costs.
 *
 * <p><b>Lookups without the lock</b> ({@link #lookupWithoutLock}, a seqlock).
 * Invariant: every change to what a lookup reads (the table and its cells, an
 * entry's handle, hash, key and write time, the arrays themselves) happens
 * under the lock between {@link #beginChange} and {@link #endChange}, which
 * make {@link #version} odd and then even again; nothing else changes them.
 * A lookup reads the version (acquire), reads table and entry with plain
 * loads, checks every slot number against the array it indexes (so a torn view
 * never throws), then reads the version again after a load-load fence; if it
 * was odd or has moved, the lookup is repeated under the lock. So a handle is
 * returned only if it was the key's handle at one moment between the two
 * reads. What a hit writes (the reference mark, by an atomic OR, and the
 * sketch's counters) is outside the seqlock and may be lost to a racing
 * writer: policy, not correctness. Queue links are never read without the lock.
 *
 * <p><b>Policy.</b> New entries enter the window, a queue of about 1% of the
 * segment's share; what overflows it moves to the probation queue, as a
 * <i>candidate</i> for as long as the write that moved it is making room (a
 * candidate that need not duel, and every entry admitted while the segment
 * had room, stays as a member of probation). An entry hit in probation is promoted to the protected
 * queue (at most 80% of the main region; its overflow is demoted back to
 * probation). To make room, the oldest candidate duels the probation queue's
 * oldest entry: the one the frequency sketch has seen less often
 * is evicted. So a one-time key cannot push out a popular one. The queues
 * are LRU approximated by second chances, as CLOCK does: a hit only marks its
 * entry (and counts in the sketch), and a marked entry that reaches the head
 * of the window or of the protected queue goes round to the tail again, and
 * one at the head of probation is promoted, instead of leaving.
 *
 * <p><b>Expiry</b> is checked on every lookup (an expired entry is a miss);
 * expired entries leave when the policy evicts them, when a write finds them
 * at the head of a queue or replaces them, or at {@link #expireAll}. An
 * entry's own deadline (when {@link Expiry#deadlines()} is on) is a third
 * bound beside the times after write and after access; the queues are not in
 * deadline order, so each write also checks a few slots at a cursor that goes
 * round all of them.
 */
final class IndexSegment {

    static final int NONE = -1;
    private static final int WINDOW = 0;
    private static final int PROBATION = 1;
    private static final int PROTECTED = 2;
    /** The queue of a slot that holds no entry. */
    private static final int FREE = 3;
    private static final int INITIAL_SLOTS = 16;
    /** Expired entries a write removes from the heads of the queues, at most. */
    private static final int SWEEP = 4;
    /** Slots a write checks for passed deadlines of their own (see {@link #sweepExpired}). */
    private static final int DEADLINE_SWEEP = 2;

    // ---- an entry's words in {@link #words}, at slot * stride ----
    /** The value's handle. */
    private static final int HANDLE = 0;
    /**
     * Charge code (bits 51-63, {@link EntryCharge}), referenced (bit 50), queue
     * (bits 48-49), previous slot + 1 (bits 24-47), next slot + 1 (bits 0-23); 0
     * is NONE + 1. A slot fits 24 bits: a segment has at most {@link #MAX_SLOTS}.
     */
    private static final int LINKS = 1;
    /**
     * The key when keys are longs (its hash is recomputed from it), else the
     * key's hash (low 32 bits), which the probe compares before {@code equals}.
     */
    private static final int KEY_OR_HASH = 2;
    private static final int LINK_BITS = 24;
    private static final long LINK_MASK = (1L << LINK_BITS) - 1;
    private static final int QUEUE_SHIFT = 2 * LINK_BITS;
    /** In the links word: hit since the entry last moved between or within queues (a move clears it). */
    private static final long REFERENCED = 1L << 50;
    private static final int CHARGE_SHIFT = 64 - EntryCharge.BITS;
    /** The charge code's bits in the links word: set when an entry is made or replaced, kept by every move. */
    private static final long CHARGE_BITS = -1L << CHARGE_SHIFT;

    // ---- a cell of {@link #table}: a tag of the hash (bits 24-31) and slot + 1 (bits 0-23); 0 is empty ----
    private static final int CELL_SLOT_BITS = 24;
    private static final int CELL_SLOT_MASK = (1 << CELL_SLOT_BITS) - 1;
    /** Slots per segment, at most: what a cell can name (a full segment evicts before it adds). */
    static final int MAX_SLOTS = CELL_SLOT_MASK;
    /** The tag takes hash bits that neither the segment number (the top bits) nor a table of up to 2^18 cells uses. */
    private static final int TAG_SHIFT = 18;

    final ReentrantLock lock = new ReentrantLock();
    /**
     * The part of the capacity this segment aims at; the index keeps the sum of all weights within the
     * capacity. Written under the lock ({@link #resize}); read without it only as a hint (volatile: never torn).
     */
    volatile long share;
    private long windowMax;
    private long protectedMax;
    private final long expireAfterWriteNanos;
    private final long expireAfterAccessNanos;
    /** Whether anything in this segment can expire. */
    private final boolean expires;
    private final FrequencySketch sketch = new FrequencySketch();

    // ---- entries, by slot ----
    /** Words per entry: handle, links, the key or its hash, then the times of the expiries that are on and the deadline. */
    private final int stride;
    /** Offsets of the write and access times and of the entry's own deadline, or -1 when it has none. */
    private final int writtenWord;
    private final int accessedWord;
    private final int deadlineWord;
    /**
     * The entries, one after the other: what one lookup reads of an entry sits
     * in one or two cache lines, where parallel arrays cost a miss per field.
     */
    private long[] words;
    /** The keys by slot when they are objects; null when they are longs (then in {@link #words}). */
    private Object[] keys;
    private int slotsUsed;
    private int freeSlot = NONE;
    /** The next slot {@link #sweepDeadlines} checks. */
    private int deadlineCursor;
    private int count;

    /** Open addressing over slots, cells as above; at most three quarters full. */
    private int[] table = new int[INITIAL_SLOTS * 2];

    private final int[] head = {NONE, NONE, NONE};
    private final int[] tail = {NONE, NONE, NONE};
    private final long[] queueCharge = new long[3];
    private long charged;
    /** The oldest entry moved from the window that has not dueled yet, or NONE. */
    private int candidate = NONE;

    /**
     * The seqlock of lookups without the lock: odd while a writer (holding
     * {@link #lock}) changes what such a lookup reads (see the class comment).
     */
    private volatile int version;
    /** Whether lookups may go without the lock: not when a hit must write its access time. */
    private final boolean lookupsWithoutLock;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

    /**
     * @param longKeys whether every key is a {@code Long}: then the keys are kept
     *        as {@code long}s in the entries (8 bytes, compared without a pointer to follow)
     */
    IndexSegment(long share, boolean longKeys, Expiry expiry) {
        this.share = share;
        long expireAfterWriteNanos = expiry.afterWriteNanos();
        long expireAfterAccessNanos = expiry.afterAccessNanos();
        int w = KEY_OR_HASH + 1;
        writtenWord = expireAfterWriteNanos > 0 ? w++ : -1;
        accessedWord = expireAfterAccessNanos > 0 ? w++ : -1;
        deadlineWord = expiry.deadlines() ? w++ : -1;
        expires = expiry.any();
        stride = w;
        words = new long[INITIAL_SLOTS * stride];
        if (!longKeys) {
            keys = new Object[INITIAL_SLOTS];
        }
        setShare(share);
        this.expireAfterWriteNanos = expireAfterWriteNanos;
        this.expireAfterAccessNanos = expireAfterAccessNanos;
        this.lookupsWithoutLock = accessedWord < 0;
    }

    /** The window's and the protected queue's bounds follow from the share. */
    private void setShare(long share) {
        this.share = share;
        this.windowMax = Math.max(1, share / 100);
        this.protectedMax = (share - windowMax) * 4 / 5;
    }

    /**
     * Gives the segment a new share and evicts (the policy's choice, as a
     * write does) until its entries fit it or none is left.
     */
    void resize(long newShare, long now, Removals out) {
        beginChange();
        try {
            setShare(newShare);
            while (charged > share && evictOne(NONE, now, out)) {
                // the duel, as in a write that overflows the share
            }
            candidate = NONE;
        } finally {
            endChange();
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
            return 0;
        }
        onAccess(e, now);
        return words[e * stride + HANDLE];
    }

    /**
     * A lookup without the lock: {@return the handle stored for {@code key}, 0
     * if there is none (or it expired), or {@link #RETRY} if a writer changed
     * the segment meanwhile (or expiry after access is on): then look up again
     * under the lock} A hit marks the entry and counts in the sketch, as
     * {@link #lookup} does, but lossily: a mark or count that races with a
     * writer may be lost, which only blurs the policy's view.
     */
    long lookupWithoutLock(Object key, int hash, long now) {
        if (!lookupsWithoutLock) {
            return RETRY;
        }
        int v = version; // volatile read (acquire): the reads below see at least the changes before it
        if ((v & 1) != 0) {
            return RETRY; // a writer is in the middle of a change
        }
        // Plain, racy reads: a writer may change anything below meanwhile, so every
        // value is checked against the arrays it indexes, and all of them are
        // discarded unless the version is still v afterwards.
        long[] w = words;
        int e = probe(table, w, keys, key, hash);
        if (e == TORN) {
            return RETRY; // arrays of different moments: the version check would fail too
        }
        int at = e == NONE ? -1 : e * stride;
        long handle = at < 0 ? 0 : w[at + HANDLE];
        boolean expired = at >= 0 && (writtenWord >= 0 && now - w[at + writtenWord] >= expireAfterWriteNanos
                || deadlineWord >= 0 && now - w[at + deadlineWord] >= 0);
        VarHandle.loadLoadFence(); // the reads above complete before the version is read again
        if (version != v) {
            return RETRY;
        }
        if (at < 0 || expired) {
            return 0;
        }
        if ((w[at + LINKS] & REFERENCED) == 0) {
            // atomic: a writer's plain store of the links word may overwrite the mark, never the reverse
            LONGS.getAndBitwiseOr(w, at + LINKS, REFERENCED);
        }
        sketch.incrementWithoutLock(hash);
        return handle;
    }

    /** {@link #lookupWithoutLock}'s answer when it must be asked again under the lock (never a handle). */
    static final long RETRY = -1;

    /**
     * A writer begins a change (holding the lock): the version turns odd
     * before any change can be seen (volatile write, then a store-store fence).
     */
    private void beginChange() {
        version = version + 1;
        VarHandle.storeStoreFence();
    }

    /** The change is complete: the version turns even (a volatile write: a release of everything before it). */
    private void endChange() {
        version = version + 1;
    }

    /** {@return the handle of {@code key}'s entry, or 0 if there is none} Not an access; expired or not. */
    long handleOf(Object key, int hash) {
        int e = find(key, hash);
        return e == NONE ? 0 : words[e * stride + HANDLE];
    }

    /** Whether {@code key} has an entry that has not expired; not an access. */
    boolean contains(Object key, int hash, long now) {
        int e = find(key, hash);
        return e != NONE && !expired(e, now);
    }

    // ---- writes --------------------------------------------------------

    /**
     * Stores {@code handle} for {@code key}, to expire at {@code deadline} if
     * entries have deadlines (see {@link Expiry#deadline}). If an unexpired entry is there:
     * with {@code onlyIfAbsent} leaves it and returns its handle; else replaces
     * its handle and deadline (the old handle goes to {@code out} as replaced) and returns 0.
     * Without an entry, adds one to the window and returns 0. Then makes room
     * within this segment's share, never evicting this key's entry.
     */
    long put(Object key, int hash, long handle, int charge, long now, long deadline, boolean onlyIfAbsent, Removals out) {
        beginChange();
        try {
            return putChanging(key, hash, handle, charge, now, deadline, onlyIfAbsent, out);
        } finally {
            endChange();
        }
    }

    private long putChanging(Object key, int hash, long handle, int charge, long now, long deadline, boolean onlyIfAbsent,
            Removals out) {
        sweepExpired(now, out);
        int e = find(key, hash);
        if (e != NONE && expired(e, now)) {
            remove(e, RemovalCause.EXPIRED, out);
            e = NONE;
        }
        if (e != NONE) {
            int at = e * stride;
            if (onlyIfAbsent) {
                onAccess(e, now);
                return words[at + HANDLE];
            }
            out.add(out.keysWanted ? keyAt(e) : null, words[at + HANDLE], RemovalCause.REPLACED);
            words[at + HANDLE] = handle;
            int code = EntryCharge.encode(charge);
            long delta = EntryCharge.decode(code) - chargeOf(e);
            words[at + LINKS] = words[at + LINKS] & ~CHARGE_BITS | (long) code << CHARGE_SHIFT;
            queueCharge[queueOf(e)] += delta;
            charged += delta;
            if (writtenWord >= 0) {
                words[at + writtenWord] = now;
            }
            if (deadlineWord >= 0) {
                words[at + deadlineWord] = deadline;
            }
            onAccess(e, now);
        } else {
            if (count == MAX_SLOTS) {
                evictOne(NONE, now, out); // a cell names at most MAX_SLOTS slots
            }
            e = insert(key, hash, handle, charge, now, deadline);
        }
        admitFromWindow(e);
        while (charged > share && evictOne(e, now, out)) {
            // the duel of candidates and victims, until the share holds (or only this key is left)
        }
        candidate = NONE; // those that did not duel stay in probation as members, as in Caffeine's maintenance
        return 0;
    }

    /** Removes {@code key}'s entry; {@return whether one was there (expired or not)} */
    boolean remove(Object key, int hash, Removals out) {
        return remove(key, hash, RemovalCause.EXPLICIT, out);
    }

    /** Removes {@code key}'s entry, reported with {@code cause}; {@return whether one was there} */
    boolean remove(Object key, int hash, RemovalCause cause, Removals out) {
        beginChange();
        try {
            return removeChanging(key, hash, cause, out);
        } finally {
            endChange();
        }
    }

    private boolean removeChanging(Object key, int hash, RemovalCause cause, Removals out) {
        int e = find(key, hash);
        if (e == NONE) {
            return false;
        }
        remove(e, cause, out);
        return true;
    }

    /**
     * Adds the key of every entry that has not expired at {@code now} to
     * {@code into}, as the index holds it; not an access. Needs the lock
     * (reads only, so no version change).
     */
    void collectKeys(long now, List<Object> into) {
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf(e) != FREE && !expired(e, now)) {
                into.add(keyAt(e));
            }
        }
    }

    /** Offers every unexpired entry's key with the sketch's estimate of its frequency (caller holds the lock). */
    void collectHot(long now, HotKeys into) {
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf(e) != FREE && !expired(e, now)) {
                int frequency = sketch.frequency(hashOf(e));
                if (into.wants(frequency)) { // a Long key is made only for a key that stays
                    into.offer(frequency, keyAt(e));
                }
            }
        }
    }

    /** Removes every entry, as explicit removals. */
    void clear(Removals out) {
        beginChange();
        try {
            clearChanging(out);
        } finally {
            endChange();
        }
    }

    private void clearChanging(Removals out) {
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf(e) != FREE) {
                out.add(out.keysWanted ? keyAt(e) : null, words[e * stride + HANDLE], RemovalCause.EXPLICIT);
            }
        }
        if (keys != null) {
            Arrays.fill(keys, null);
        }
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
        beginChange();
        try {
            expireAllChanging(now, out);
        } finally {
            endChange();
        }
    }

    private void expireAllChanging(long now, Removals out) {
        if (!expires) {
            return;
        }
        for (int e = 0; e < slotsUsed; e++) {
            if (queueOf(e) != FREE && expired(e, now)) {
                remove(e, RemovalCause.EXPIRED, out);
            }
        }
    }

    /**
     * Evicts one entry other than {@code key}'s (any, if {@code key} is null;
     * the policy's choice; an expired one goes as expired). {@return false if
     * there was none to evict}
     */
    boolean evictOneExcept(Object key, int hash, long now, Removals out) {
        beginChange();
        try {
            return evictOneExceptChanging(key, hash, now, out);
        } finally {
            endChange();
        }
    }

    private boolean evictOneExceptChanging(Object key, int hash, long now, Removals out) {
        return evictOne(key == null ? NONE : find(key, hash), now, out);
    }

    private boolean evictOne(int keep, long now, Removals out) {
        int victim = head[PROBATION];
        // entries hit while on probation are promoted, not dueled (each pass clears a mark or moves one out)
        while (victim != NONE && victim != keep && referenced(victim)) {
            promote(victim);
            victim = head[PROBATION];
        }
        while (candidate != NONE && candidate != victim && candidate != keep && referenced(candidate)) {
            promote(candidate); // unlink moves the candidate mark to the entry after it
        }
        int chosen;
        if (candidate != NONE && victim != NONE && victim != candidate) {
            chosen = sketch.frequency(hashOf(candidate)) > sketch.frequency(hashOf(victim)) ? victim : candidate;
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
            candidate = nextOf(candidate); // the candidate won its duel: admitted, the next one duels next time
        }
        remove(chosen, expired(chosen, now) ? RemovalCause.EXPIRED : RemovalCause.SIZE, out);
        return true;
    }

    /** The entry after {@code e} in its queue, else the head of another queue; NONE if {@code e} is alone. */
    private int otherThan(int e) {
        int n = nextOf(e);
        if (n != NONE) {
            return n;
        }
        for (int q = WINDOW; q <= PROTECTED; q++) {
            if (head[q] != NONE && head[q] != e) {
                return head[q];
            }
        }
        return NONE;
    }

    // ---- policy --------------------------------------------------------

    /**
     * A hit: counted by the sketch and marked on the entry itself. Nothing
     * moves: the queues are kept in order lazily, by second chances when an
     * entry reaches the head of its queue ({@link #admitFromWindow},
     * {@link #evictOne}, {@link #promote}). Moving a hit entry to its queue's
     * tail at once, as an LRU list does, wrote its two neighbours, two more
     * cache misses on every hit.
     */
    private void onAccess(int e, long now) {
        sketch.increment(hashOf(e));
        int at = e * stride;
        if (accessedWord >= 0) {
            words[at + accessedWord] = now;
        }
        long l = words[at + LINKS];
        if ((l & REFERENCED) == 0) {
            words[at + LINKS] = l | REFERENCED;
        }
    }

    private boolean referenced(int e) {
        return (words[e * stride + LINKS] & REFERENCED) != 0;
    }

    /**
     * Moves a probation entry that was hit to the protected queue, then demotes
     * the protected queue's overflow to probation, oldest first, except entries
     * hit since they last moved: those go round again (and lose their mark).
     */
    private void promote(int e) {
        moveToTail(e, PROTECTED);
        while (queueCharge[PROTECTED] > protectedMax && head[PROTECTED] != e) {
            int h = head[PROTECTED];
            moveToTail(h, referenced(h) ? PROTECTED : PROBATION);
        }
    }

    /** Moves the window's overflow (oldest first, never {@code keep}) to probation as candidates. */
    private void admitFromWindow(int keep) {
        while (queueCharge[WINDOW] > windowMax && head[WINDOW] != NONE && head[WINDOW] != keep) {
            int c = head[WINDOW];
            if (referenced(c)) {
                moveToTail(c, WINDOW); // hit while in the window: it stays (a move clears the mark)
                continue;
            }
            moveToTail(c, PROBATION);
            if (candidate == NONE) {
                candidate = c;
            }
        }
    }

    /**
     * A write's share of expiry: the expired heads of the queues (where the times
     * after write and after access come due first), and, when entries have
     * deadlines of their own, which follow no queue's order, {@value #DEADLINE_SWEEP}
     * slots at a cursor that goes round all of them, so that an entry whose
     * deadline passed leaves within a round of writes even if no one asks for it.
     */
    private void sweepExpired(long now, Removals out) {
        if (!expires) {
            return;
        }
        sweepHeads(now, out);
        if (deadlineWord >= 0) {
            sweepDeadlines(now, out);
        }
    }

    private void sweepDeadlines(long now, Removals out) {
        for (int n = 0; n < DEADLINE_SWEEP && slotsUsed > 0; n++) {
            if (deadlineCursor >= slotsUsed) {
                deadlineCursor = 0;
            }
            int e = deadlineCursor++;
            if (queueOf(e) != FREE && now - words[e * stride + deadlineWord] >= 0) {
                remove(e, RemovalCause.EXPIRED, out);
            }
        }
    }

    private void sweepHeads(long now, Removals out) {
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
        int at = e * stride;
        return (writtenWord >= 0 && now - words[at + writtenWord] >= expireAfterWriteNanos)
                || (accessedWord >= 0 && now - words[at + accessedWord] >= expireAfterAccessNanos)
                || (deadlineWord >= 0 && now - words[at + deadlineWord] >= 0);
    }

    // ---- an entry's fields ---------------------------------------------

    private int hashOf(int e) {
        long w = words[e * stride + KEY_OR_HASH];
        return keys == null ? CacheIndex.hash(w) : (int) w;
    }

    private long chargeOf(int e) {
        return EntryCharge.decode((int) (words[e * stride + LINKS] >>> CHARGE_SHIFT));
    }

    private int queueOf(int e) {
        return (int) (words[e * stride + LINKS] >>> QUEUE_SHIFT) & 3;
    }

    private int nextOf(int e) {
        return (int) (words[e * stride + LINKS] & LINK_MASK) - 1;
    }

    private int prevOf(int e) {
        return (int) (words[e * stride + LINKS] >>> LINK_BITS & LINK_MASK) - 1;
    }

    private static long links(int queue, int prev, int next) {
        return (long) queue << QUEUE_SHIFT | (long) (prev + 1) << LINK_BITS | (next + 1);
    }

    private void setNext(int e, int next) {
        int at = e * stride + LINKS;
        words[at] = words[at] & ~LINK_MASK | (next + 1);
    }

    private void setPrev(int e, int prev) {
        int at = e * stride + LINKS;
        words[at] = words[at] & ~(LINK_MASK << LINK_BITS) | (long) (prev + 1) << LINK_BITS;
    }

    // ---- queues --------------------------------------------------------

    private void moveToTail(int e, int q) {
        unlink(e);
        link(e, q);
    }

    private void link(int e, int q) {
        int t = tail[q];
        int at = e * stride + LINKS;
        words[at] = words[at] & CHARGE_BITS | links(q, t, NONE); // a move clears the mark, keeps the charge
        if (t == NONE) {
            head[q] = e;
        } else {
            setNext(t, e);
        }
        tail[q] = e;
        queueCharge[q] += chargeOf(e);
    }

    private void unlink(int e) {
        long l = words[e * stride + LINKS];
        int q = (int) (l >>> QUEUE_SHIFT) & 3;
        int p = (int) (l >>> LINK_BITS & LINK_MASK) - 1;
        int n = (int) (l & LINK_MASK) - 1;
        if (e == candidate) {
            candidate = n; // the next candidate, or an entry behind it in probation (NONE at the end)
        }
        if (p == NONE) {
            head[q] = n;
        } else {
            setNext(p, n);
        }
        if (n == NONE) {
            tail[q] = p;
        } else {
            setPrev(n, p);
        }
        queueCharge[q] -= chargeOf(e);
    }

    // ---- entries and the hash table -------------------------------------

    private Object keyAt(int e) {
        return keys != null ? keys[e] : Long.valueOf(words[e * stride + KEY_OR_HASH]);
    }

    private static int tagOf(int hash) {
        return (hash >>> TAG_SHIFT & 0xFF) << CELL_SLOT_BITS;
    }

    private int find(Object key, int hash) {
        return probe(table, words, keys, key, hash); // under the lock the arrays agree: never TORN
    }

    /** What {@link #probe} returns when a cell names a slot beyond the arrays it was given. */
    private static final int TORN = -2;

    /**
     * Linear probing for {@code key} in the arrays given (the segment's own, or
     * a lookup without the lock's racy copies of them); {@return its slot, NONE,
     * or TORN} Every slot is checked against the arrays and the probe ends after
     * one pass, so a racy view never throws or loops.
     */
    private int probe(int[] t, long[] w, Object[] ks, Object key, int hash) {
        int mask = t.length - 1;
        int tag = tagOf(hash);
        for (int i = hash & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
            int cell = t[i];
            if (cell == 0) {
                return NONE;
            }
            if ((cell & ~CELL_SLOT_MASK) == tag) {
                int e = (cell & CELL_SLOT_MASK) - 1;
                int a = e * stride;
                if (a + stride > w.length || (ks != null && e >= ks.length)) {
                    return TORN;
                }
                if (ks != null
                        ? (int) w[a + KEY_OR_HASH] == hash && key.equals(ks[e])
                        : (Long) key == w[a + KEY_OR_HASH]) {
                    return e;
                }
            }
        }
        return NONE;
    }

    private int insert(Object key, int hash, long handle, int charge, long now, long deadline) {
        assert keys != null || hash == CacheIndex.hash((long) (Long) key) : "an entry of a long key recomputes its hash";
        if ((count + 1) * 4L > table.length * 3L) {
            rehash(table.length * 2);
        }
        int e = freeSlot;
        if (e != NONE) {
            freeSlot = nextOf(e);
        } else {
            int slots = words.length / stride;
            if (slotsUsed == slots) {
                growSlots(Math.min(MAX_SLOTS, slots + Math.max(16, slots >> 3))); // by an eighth: the slack is charged to every entry
            }
            e = slotsUsed++;
        }
        int at = e * stride;
        if (keys != null) {
            keys[e] = key;
            words[at + KEY_OR_HASH] = Integer.toUnsignedLong(hash);
        } else {
            words[at + KEY_OR_HASH] = (Long) key;
        }
        words[at + HANDLE] = handle;
        int code = EntryCharge.encode(charge);
        words[at + LINKS] = (long) code << CHARGE_SHIFT; // link() below keeps it
        if (writtenWord >= 0) {
            words[at + writtenWord] = now;
        }
        if (accessedWord >= 0) {
            words[at + accessedWord] = now;
        }
        if (deadlineWord >= 0) {
            words[at + deadlineWord] = deadline;
        }
        int mask = table.length - 1;
        int i = hash & mask;
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = tagOf(hash) | (e + 1);
        count++;
        charged += EntryCharge.decode(code);
        link(e, WINDOW);
        sketch.increment(hash);
        sketch.ensureCapacity(count);
        return e;
    }

    private void remove(int e, RemovalCause cause, Removals out) {
        out.add(out.keysWanted ? keyAt(e) : null, words[e * stride + HANDLE], cause);
        unlink(e);
        charged -= chargeOf(e);
        count--;
        deleteFromTable(e);
        if (keys != null) {
            keys[e] = null; // not kept reachable
        }
        words[e * stride + LINKS] = links(FREE, NONE, freeSlot);
        freeSlot = e;
    }

    /** Linear probing's deletion: empties the entry's cell and shifts back what probed past it. */
    private void deleteFromTable(int e) {
        int mask = table.length - 1;
        int i = hashOf(e) & mask;
        while ((table[i] & CELL_SLOT_MASK) != e + 1) {
            i = (i + 1) & mask;
        }
        for (int j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
            int home = hashOf((table[j] & CELL_SLOT_MASK) - 1) & mask;
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
        for (int cell : table) {
            if (cell != 0) {
                int i = hashOf((cell & CELL_SLOT_MASK) - 1) & mask;
                while (t[i] != 0) {
                    i = (i + 1) & mask;
                }
                t[i] = cell;
            }
        }
        table = t;
    }

    private void growSlots(int n) {
        words = Arrays.copyOf(words, n * stride);
        if (keys != null) {
            keys = Arrays.copyOf(keys, n);
        }
    }

    /**
     * Entries that left the index, to be told to the listener and freed once the segment's
     * lock is released. The first two are kept in fields: a write removes at most the entry it
     * replaces and one it evicts most of the time, and the three arrays it made for them were
     * about 90 bytes per write (CacheBenchmark, 100 B values, 50% writes: 275-293 bytes
     * allocated per operation with the arrays, 247 without; OHC's run 148).
     */
    static final class Removals {
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
            return java.util.Objects.checkIndex(i, size);
        }
    }
}
