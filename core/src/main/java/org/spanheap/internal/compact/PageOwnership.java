package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;

/**
 * Thread-owned pages for the small size classes (those whose page holds at
 * least {@link CompactFitHeap#OWNED_MIN_BLOCKS} blocks), as in mimalloc's
 * free-list sharding: each platform thread owns a page per class that it
 * allocates from without a lock, and the full one before it, whose frees wait
 * for their epoch ({@link ThreadPages}); a free by the
 * owner is a plain push of its slot on the page's {@link DeferredSlots}; a free by another
 * thread is a CAS push on the page's thread-free list ({@link RemoteFrees}),
 * which the owner takes whole when its page has no free slot. Virtual threads
 * allocate through the class's lanes (one page per virtual thread would cost
 * a page each).
 *
 * <h2>Invariants</h2>
 * <ul>
 * <li>A page's owner changes only under its class's lock: {@link #adopt} and
 *     {@link #giveUp} hold it. While a page is owned, its slots, counts and
 *     deferred frees are touched by the owner alone; rounds touch only its
 *     thread-free list (a released limbo entry whose page is owned goes there:
 *     see {@code LimboRelease}).</li>
 * <li>An owned page is in no not-full list: allocation by the lanes, the
 *     planning of moves (as source or destination) and {@code relocate} never
 *     see it. A page a round or {@code relocate} is emptying ({@code evacuating})
 *     or filling with planned moves ({@code movesIn > 0}) is never adopted: both
 *     are set under the lane lock when a move is planned and cleared when it is
 *     published, so no owner takes slots from a page whose slots a move
 *     releases or reserves.</li>
 * <li>A thread-free list is open exactly while the page is owned; giving the
 *     page up closes it and pushes what it held on the limbo, where the next
 *     round reclaims them as any other free. Its deferred slots stay in the
 *     page (their indices are reused already) and the page is listed in
 *     {@link PendingSlots}, whose round frees them under the class's lock.</li>
 * <li>An index the owner frees (or collects from the thread-free list) is
 *     reused at once, its slot only after its epoch closed: the kill moved the
 *     index's generation on, and a resolve loads the state again after the
 *     address, so a stale handle never reaches the next object on its index.</li>
 * <li>A page's owner, read without the lock by a freeing thread, names that
 *     thread only if it is the owner: only the owner writes its own record
 *     away (giving up), and a thread's own writes are never hidden by older
 *     ones. A free that reads another owner or none pushes on the thread-free
 *     list, and the one word decides ({@link RemoteFrees}).</li>
 * <li>A terminated thread's pages are given up by whichever thread notices its
 *     death first ({@link #adoptDeadThreads}: the background thread on its
 *     idle ticks, and calls such as {@code compact()}); its record leaves the
 *     registry under this object's lock, so that happens once. The thread's
 *     termination orders all its plain writes before that.</li>
 * </ul>
 */
final class PageOwnership {

    private final Rounds rounds;
    private final Epochs epochs;
    private final HandleTable table;
    private final PageReserve source;
    private final Limbo limbo;
    private final PendingSlots pendingSlots;
    private final SizeClassPages[] lanes;
    private final int[] firstLane;
    private final boolean[] owned;
    /** Slots of {@link #byThread}, a power of two. */
    private static final int TABLE_SIZE = 256;
    private static final VarHandle SLOTS = MethodHandles.arrayElementVarHandle(ThreadPages[].class);
    /**
     * Records by thread id ({@code threadId & (TABLE_SIZE - 1)}), read plainly: a thread uses
     * the record it finds only if the record's final {@code thread} is itself (final fields are
     * seen initialised by any thread that sees the reference), so a stale or racing read only
     * sends it to {@link #local}. A lookup here is a field and an array load, against about
     * 5 ns for a {@code ThreadLocal} on every allocation.
     */
    private final ThreadPages[] byThread = new ThreadPages[TABLE_SIZE];
    /** Records of threads whose slot of {@link #byThread} another live thread holds. */
    private final ThreadLocal<ThreadPages> local = new ThreadLocal<>();
    /** Every live record (guarded by this), and the counters of records whose thread ended. */
    private final ArrayList<ThreadPages> records = new ArrayList<>();
    private long endedAllocated, endedAllocatedBytes, endedReleased, endedReleasedBytes;

    PageOwnership(Rounds rounds, Epochs epochs, HandleTable table, PageReserve source, Limbo limbo, PendingSlots pendingSlots,
            SizeClassPages[] lanes, int[] firstLane, boolean[] owned) {
        this.rounds = rounds;
        this.epochs = epochs;
        this.table = table;
        this.source = source;
        this.limbo = limbo;
        this.pendingSlots = pendingSlots;
        this.lanes = lanes;
        this.firstLane = firstLane;
        this.owned = owned;
    }

    /** {@return whether class {@code cls} allocates from thread-owned pages} */
    boolean owns(int cls) {
        return owned[cls];
    }

    /** {@return the calling thread's record, made on its first call; null for a virtual thread} */
    ThreadPages mine() {
        Thread me = Thread.currentThread();
        ThreadPages t = byThread[(int) me.threadId() & (TABLE_SIZE - 1)];
        return t != null && t.thread == me ? t : mineSlow(me);
    }

    private ThreadPages mineSlow(Thread me) {
        ThreadPages t = local.get();
        if (t == null) {
            if (me.isVirtual()) {
                return null;
            }
            t = new ThreadPages(me, owned.length);
            int slot = (int) me.threadId() & (TABLE_SIZE - 1);
            synchronized (this) {
                records.add(t);
                ThreadPages held = byThread[slot];
                if (held == null || !held.thread.isAlive()) { // a dead thread's record stays in records until given up
                    SLOTS.setRelease(byThread, slot, t);
                    return t;
                }
            }
            local.set(t);
        }
        return t;
    }

    /** {@return the calling thread's record if it has one, without making one} */
    private ThreadPages mineIfAny() {
        Thread me = Thread.currentThread();
        ThreadPages t = byThread[(int) me.threadId() & (TABLE_SIZE - 1)];
        return t != null && t.thread == me ? t : local.get();
    }

    // ---- the owner's side ---------------------------------------------------------

    /**
     * The owner's page of class {@code cls} with a free slot. Its current page, after
     * collecting what became reusable if it had none; else its waiting page (the one it filled
     * before) if an epoch change made room there, the two swapping roles; else the waiting page
     * is given up, the full current page waits in its place, and another page is adopted. If
     * one of the two holds at least an eighth of a page of deferred frees, which only an epoch
     * change makes reusable, the background thread is asked for one: pages nearly full of live
     * objects are not worth a handshake with every thread.
     */
    Page pageWithRoom(ThreadPages t, int cls) {
        Page p = t.pages[cls];
        if (p != null) {
            if (p.hasFree()) {
                return p;
            }
            collect(t, cls, p);
            if (p.hasFree()) {
                return p;
            }
            Page w = t.waiting[cls];
            int deferred = p.deferred.count();
            if (w != null) {
                collect(t, cls, w);
                if (w.hasFree()) {
                    t.pages[cls] = w;
                    t.waiting[cls] = p;
                    return w;
                }
                deferred = Math.max(deferred, w.deferred.count());
            }
            if (deferred >= p.sizeClass.blocksPerPage >>> 3) {
                rounds.requestEpochChange();
            }
            if (w != null) {
                t.waiting[cls] = null;
                rounds.limboPushed(giveUp(w));
            }
            t.pages[cls] = null;
            t.waiting[cls] = p;
        }
        return adopt(t, cls);
    }

    /**
     * The owner's free of {@code index} (killed from {@code before}) in its own page {@code p}:
     * the index goes back to the magazine at once (a stale handle never matches its next
     * generation), the slot waits for its epoch in the page's {@link DeferredSlots}.
     */
    void deferFree(ThreadPages t, Page p, int index, long before) {
        int slot = p.slotOf(table.address(index)); // an owned page's entries never move
        reuseIndex(t, p.sizeClass.sizeClass, index, HandleTable.killExhausts(before));
        p.deferred.add(p, slot, slot, 1, HandleTable.size(before), epochs.number); // read after the kill: see DeferredSlots
    }

    private void reuseIndex(ThreadPages t, int cls, int index, boolean exhausted) {
        if (exhausted) {
            table.retire(); // its generation ran out: never reused
        } else {
            t.putIndex(table, cls, index);
        }
    }

    /**
     * The owner collects: takes its thread-free list (its slots tagged with the epoch current
     * after the take, its indices reused at once), then frees every deferred slot whose epoch
     * has closed.
     */
    private void collect(ThreadPages t, int cls, Page p) {
        DeferredSlots d = p.deferred;
        int remote = p.remoteFree.takeAll();
        if (remote != HandleTable.NO_INDEX) {
            long epoch = epochs.number; // after the take: after every push in the chain
            int n = 0, head = Page.DEFERRED_END, tail = Page.DEFERRED_END;
            long bytes = 0;
            for (int i = remote; i != HandleTable.NO_INDEX;) {
                int next = table.link(i);
                long state = table.stateAcquire(i); // killed: the size stays
                int slot = p.slotOf(table.address(i));
                if (n == 0) {
                    tail = slot;
                } else {
                    p.linkDeferred(slot, head);
                }
                head = slot;
                n++;
                bytes += HandleTable.size(state);
                reuseIndex(t, cls, i, HandleTable.exhausted(state));
                i = next;
            }
            d.add(p, head, tail, n, bytes, epoch);
        }
        int n = d.releaseReusable(p, epochs.closedThrough);
        if (n > 0) {
            t.released += n;
            t.releasedBytes += d.takenBytes();
        }
        if (t.indexCount[cls] > ThreadPages.MAGAZINE_CAP) {
            t.trimMagazine(table, cls, ThreadPages.MAGAZINE_CAP / 2);
        }
    }

    /** Takes a page of class {@code cls} for {@code t}: a not-full page of its lane, else a new one. */
    private Page adopt(ThreadPages t, int cls) {
        int base = firstLane[cls];
        int n = firstLane[cls + 1] - base;
        SizeClassPages c = lanes[base + (int) Long.remainderUnsigned(t.thread.threadId(), n)];
        Page p;
        c.lock.lock();
        try {
            epochs.checkOpen();
            p = c.adoptable();
            if (p == null) {
                p = c.newPage(source);
            } else {
                c.detach(p);
            }
            c.liveBlocks -= p.used; // the owner's now: counted in its record
            if (p.deferred == null) {
                p.deferred = new DeferredSlots();
            }
            p.ownerPages = t;
            p.remoteFree.open();
            takeLaneIndices(t, cls, c);
        } finally {
            c.lock.unlock();
        }
        t.pages[cls] = p;
        return p;
    }

    /**
     * Moves up to {@link SizeClassPages#INDEX_BATCH} of the lane's cached indices (those its
     * rounds released, latest first) to the top of {@code t}'s magazine, so that indices freed
     * through the limbo come back to the allocating threads (caller holds the lane's lock).
     */
    private void takeLaneIndices(ThreadPages t, int cls, SizeClassPages c) {
        for (int k = 0; k < SizeClassPages.INDEX_BATCH; k++) {
            int i = c.indices.popCachedOrNone(table);
            if (i == HandleTable.NO_INDEX) {
                return;
            }
            t.putIndex(table, cls, i);
        }
    }

    /** Gives up both of {@code t}'s pages of class {@code cls} (see {@link #giveUp(Page)}); {@return the limbo's pending units} */
    long giveUp(ThreadPages t, int cls) {
        Page p = t.pages[cls], w = t.waiting[cls];
        t.pages[cls] = null;
        t.waiting[cls] = null;
        return Math.max(p == null ? 0 : giveUp(p), w == null ? 0 : giveUp(w));
    }

    /**
     * Gives an owned page back to its lane (called by its owner, or by the thread adopting a
     * terminated owner's pages; the caller has taken it out of the owner's record): closes its
     * thread-free list and pushes what it held on the limbo, and lists the page in
     * {@link PendingSlots} if slots freed in it still wait for their epoch; an empty page goes
     * back to the page source. {@return the limbo's pending units after the push, at least 1
     * if slots wait, 0 if nothing does}
     */
    private long giveUp(Page p) {
        SizeClassPages c = p.sizeClass;
        long pending;
        boolean empty = false;
        c.lock.lock();
        try {
            if (epochs.closed) { // close() holds every lane lock: under this one the answer is final
                p.ownerPages = null; // its pages and entries are gone with the heap
                return 0;
            }
            pending = pushOnLimbo(p.remoteFree.close());
            p.ownerPages = null;
            if (p.pagePos >= 0) { // else the heap closed and gave every page back
                c.liveBlocks += p.used; // its deferred slots too, until a round frees them
                if (p.deferred.count() > 0) {
                    pendingSlots.add(p); // their indices are reused: a round frees the slots (PendingSlots)
                    pending = Math.max(pending, 1);
                }
                if (p.used == 0) {
                    c.removePage(p);
                    empty = true;
                } else {
                    c.refile(p);
                }
            }
        } finally {
            c.lock.unlock();
        }
        if (empty) {
            source.freePage(p.base);
        }
        return pending;
    }

    /** Pushes a chain of killed indices on the limbo; {@return the pending units, 0 for an empty chain} */
    private long pushOnLimbo(int head) {
        if (head == HandleTable.NO_INDEX) {
            return 0;
        }
        int tail = head;
        long units = 0;
        for (int i = head; i != HandleTable.NO_INDEX; i = table.link(i)) {
            units += Limbo.units(HandleTable.size(table.stateAcquire(i)));
            tail = i;
        }
        return limbo.pushChain(head, tail, units);
    }

    // ---- other threads' side ------------------------------------------------------

    /** Gives up the calling thread's pages (before a call that reports or bounds the heap); {@return the limbo's pending units} */
    long giveUpMine() {
        ThreadPages t = mineIfAny();
        long pending = 0;
        if (t != null) {
            for (int cls = 0; cls < owned.length; cls++) {
                pending = Math.max(pending, giveUp(t, cls));
            }
        }
        return pending;
    }

    /**
     * Gives up the pages and indices of every record whose thread has terminated; {@return
     * whether there were any}. Holds this object's monitor throughout, so that statistics
     * (which hold it while they count) never see a record gone and its frees not yet on the
     * limbo; a terminated thread's record is taken out of the registry once.
     */
    boolean adoptDeadThreads() {
        long pending = 0;
        boolean any = false;
        synchronized (this) {
            for (int k = records.size() - 1; k >= 0; k--) {
                ThreadPages t = records.get(k);
                if (t.thread.isAlive()) {
                    continue;
                }
                // its termination happens-before isAlive() returning false: its plain writes are visible
                any = true;
                records.set(k, records.get(records.size() - 1));
                records.remove(records.size() - 1);
                int slot = (int) t.thread.threadId() & (TABLE_SIZE - 1);
                if (byThread[slot] == t) {
                    SLOTS.setRelease(byThread, slot, null); // the record and its thread can be collected
                }
                for (int cls = 0; cls < owned.length; cls++) {
                    pending = Math.max(pending, giveUp(t, cls)); // lane locks inside: monitor, then lane lock
                    t.trimMagazine(table, cls, 0);
                }
                endedAllocated += t.allocated;
                endedAllocatedBytes += t.allocatedBytes;
                endedReleased += t.released;
                endedReleasedBytes += t.releasedBytes;
            }
        }
        if (any) {
            rounds.limboPushed(pending); // outside the monitor: it may wait for the round lock
        }
        return any;
    }

    /**
     * Adds the owned pages' share to the statistics (racy reads of the owners' plain fields:
     * a hint while they run; the caller holds this object's monitor across its whole count,
     * see {@link #adoptDeadThreads}): {@code out[0..6]} += allocated objects, allocated bytes, released
     * objects, released bytes, deferred objects, deferred bytes, block bytes in owned pages.
     */
    synchronized void addCounters(long[] out) {
        out[0] += endedAllocated;
        out[1] += endedAllocatedBytes;
        out[2] += endedReleased;
        out[3] += endedReleasedBytes;
        for (ThreadPages t : records) {
            out[0] += t.allocated;
            out[1] += t.allocatedBytes;
            out[2] += t.released;
            out[3] += t.releasedBytes;
            for (int cls = 0; cls < t.pages.length; cls++) {
                addPage(out, t.pages[cls]);
                addPage(out, t.waiting[cls]);
            }
        }
    }

    private static void addPage(long[] out, Page p) {
        DeferredSlots d = p == null ? null : p.deferred;
        if (d != null) {
            out[4] += d.count();
            out[5] += d.bytes();
            out[6] += (long) p.used * p.sizeClass.blockSize;
        }
    }

    /** {@return allocations plus reclaimed frees in owned pages: a hint of activity} */
    synchronized long operations() {
        long n = endedAllocated + endedReleased;
        for (ThreadPages t : records) {
            n += t.allocated + t.released;
        }
        return n;
    }
}
