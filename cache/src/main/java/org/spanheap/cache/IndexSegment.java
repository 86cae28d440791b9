package org.spanheap.cache;

import static org.spanheap.cache.SegmentTable.HANDLE;
import static org.spanheap.cache.SegmentTable.LINKS;
import static org.spanheap.cache.SegmentTable.NONE;
import static org.spanheap.cache.SegmentTable.REFERENCED;
import static org.spanheap.cache.SegmentTable.TORN;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One stripe of the cache's index: its entries and hash table ({@link SegmentTable}), the
 * W-TinyLFU policy over them ({@link EvictionPolicy}) and their expiry ({@link ExpirySweep}),
 * all guarded by {@link #lock}; every method but the constructor and
 * {@link #lookupWithoutLock} expects the caller to hold it. The segment composes the three:
 * an entry is added to the table and then to the policy's window, removed from the policy's
 * queues and then from the table, and it keeps the charge of all its entries against its
 * share of the capacity.
 *
 * <p><b>Lookups without the lock</b> ({@link #lookupWithoutLock}, a seqlock).
 * Invariant: every change to what a lookup reads (the hash table and its cells, an entry's
 * handle, hash, key and write time, the arrays themselves) happens under the lock between
 * {@link #beginChange} and {@link #endChange}, which make {@link #version} odd and then even
 * again; nothing else changes them. A lookup reads the version (acquire), reads table and
 * entry with plain loads, checks every slot number against the array it indexes (so a torn
 * view never throws), then reads the version again after a load-load fence; if it was odd
 * or has moved, the lookup is repeated under the lock. So a handle is returned only if it
 * was the key's handle at one moment between the two reads. What a hit writes (the
 * reference mark, by an atomic OR, and the sketch's counters) is outside the seqlock and
 * may be lost to a racing writer: policy, not correctness. Queue links are never read
 * without the lock.
 */
final class IndexSegment {

    static final int MAX_SLOTS = SegmentTable.MAX_SLOTS;

    final ReentrantLock lock = new ReentrantLock();
    /**
     * The part of the capacity this segment aims at; the index keeps the sum of all weights within the
     * capacity. Written under the lock ({@link #resize}); read without it only as a hint (volatile: never torn).
     */
    volatile long share;
    private final SegmentTable entries;
    private final EvictionPolicy policy;
    private final ExpirySweep expiry;
    private long charged;

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
        this.entries = new SegmentTable(longKeys, expiry);
        this.policy = new EvictionPolicy(entries);
        this.expiry = new ExpirySweep(entries, policy, expiry);
        this.lookupsWithoutLock = entries.accessedWord < 0;
        setShare(share);
    }

    private void setShare(long share) {
        this.share = share;
        policy.setShare(share);
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
            policy.roomMade();
        } finally {
            endChange();
        }
    }

    /** {@return the bytes the entries of this segment are charged} */
    long charged() {
        return charged;
    }

    int count() {
        return entries.count();
    }

    // ---- lookups -------------------------------------------------------

    /**
     * {@return the handle stored for {@code key}, or 0 if there is none or it
     * expired} A hit counts as an access for the policy and for expiry.
     */
    long lookup(Object key, int hash, long now) {
        int e = entries.find(key, hash);
        if (e == NONE || expiry.expired(e, now)) {
            return 0;
        }
        onAccess(e, now);
        return entries.handle(e);
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
        long[] w = entries.words;
        int e = SegmentTable.probe(entries.table, w, entries.keys, entries.stride, key, hash);
        if (e == TORN) {
            return RETRY; // arrays of different moments: the version check would fail too
        }
        int at = e == NONE ? -1 : e * entries.stride;
        long handle = at < 0 ? 0 : w[at + HANDLE];
        boolean expired = at >= 0 && expiry.expired(w, at, now); // no access time here: lookupsWithoutLock
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
        policy.sketch.incrementWithoutLock(hash);
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
        int e = entries.find(key, hash);
        return e == NONE ? 0 : entries.handle(e);
    }

    /** Whether {@code key} has an entry that has not expired; not an access. */
    boolean contains(Object key, int hash, long now) {
        int e = entries.find(key, hash);
        return e != NONE && !expiry.expired(e, now);
    }

    /** A hit, for the policy and for expiry after access. */
    private void onAccess(int e, long now) {
        entries.accessed(e, now);
        policy.accessed(e);
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
        int e = entries.find(key, hash);
        if (e != NONE && expiry.expired(e, now)) {
            remove(e, RemovalCause.EXPIRED, out);
            e = NONE;
        }
        if (e != NONE) {
            if (onlyIfAbsent) {
                onAccess(e, now);
                return entries.handle(e);
            }
            out.add(out.keysWanted ? entries.keyAt(e) : null, entries.handle(e), RemovalCause.REPLACED);
            entries.setHandle(e, handle);
            long delta = entries.setChargeCode(e, EntryCharge.encode(charge));
            policy.chargeChanged(e, delta);
            charged += delta;
            entries.written(e, now);
            entries.setDeadline(e, deadline);
            onAccess(e, now);
        } else {
            if (entries.count() == MAX_SLOTS) {
                evictOne(NONE, now, out); // a cell names at most MAX_SLOTS slots
            }
            int code = EntryCharge.encode(charge);
            e = entries.insert(key, hash, handle, code, now, deadline);
            charged += EntryCharge.decode(code);
            policy.added(e, hash, entries.count());
        }
        policy.admitFromWindow(e);
        while (charged > share && evictOne(e, now, out)) {
            // the duel of candidates and victims, until the share holds (or only this key is left)
        }
        policy.roomMade(); // as in Caffeine's maintenance
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
        int e = entries.find(key, hash);
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
        for (int e = 0; e < entries.slotsUsed(); e++) {
            if (entries.holdsEntry(e) && !expiry.expired(e, now)) {
                into.add(entries.keyAt(e));
            }
        }
    }

    /** Offers every unexpired entry's key with the sketch's estimate of its frequency (caller holds the lock). */
    void collectHot(long now, HotKeys into) {
        for (int e = 0; e < entries.slotsUsed(); e++) {
            if (entries.holdsEntry(e) && !expiry.expired(e, now)) {
                int frequency = policy.frequency(e);
                if (into.wants(frequency)) { // a Long key is made only for a key that stays
                    into.offer(frequency, entries.keyAt(e));
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
        for (int e = 0; e < entries.slotsUsed(); e++) {
            if (entries.holdsEntry(e)) {
                out.add(out.keysWanted ? entries.keyAt(e) : null, entries.handle(e), RemovalCause.EXPLICIT);
            }
        }
        entries.clear();
        policy.clear();
        charged = 0;
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
        if (!expiry.expires) {
            return;
        }
        for (int e = 0; e < entries.slotsUsed(); e++) {
            if (entries.holdsEntry(e) && expiry.expired(e, now)) {
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
            return evictOne(key == null ? NONE : entries.find(key, hash), now, out);
        } finally {
            endChange();
        }
    }

    /** Evicts the policy's choice, never {@code keep}; {@return false if there was none} */
    private boolean evictOne(int keep, long now, Removals out) {
        int chosen = policy.victim(keep);
        if (chosen == NONE) {
            return false;
        }
        remove(chosen, expiry.expired(chosen, now) ? RemovalCause.EXPIRED : RemovalCause.SIZE, out);
        return true;
    }

    /** A write's share of expiry: expired heads of the queues, and slots at the deadline cursor ({@link ExpirySweep}). */
    private void sweepExpired(long now, Removals out) {
        if (!expiry.expires) {
            return;
        }
        for (int n = 0; n < ExpirySweep.HEADS; n++) {
            int e = expiry.expiredHead(now);
            if (e == NONE) {
                break;
            }
            remove(e, RemovalCause.EXPIRED, out);
        }
        if (expiry.deadlines()) {
            for (int n = 0; n < ExpirySweep.DEADLINE_SLOTS && entries.slotsUsed() > 0; n++) {
                int e = expiry.nextDeadlineSlot(now);
                if (e != NONE) {
                    remove(e, RemovalCause.EXPIRED, out);
                }
            }
        }
    }

    /** Entry {@code e} leaves: reported in {@code out}, unlinked from its queue, its slot freed. */
    private void remove(int e, RemovalCause cause, Removals out) {
        out.add(out.keysWanted ? entries.keyAt(e) : null, entries.handle(e), cause);
        policy.removed(e);
        charged -= entries.chargeOf(e);
        entries.delete(e);
    }
}
