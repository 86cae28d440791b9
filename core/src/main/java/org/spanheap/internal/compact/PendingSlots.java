package org.spanheap.internal.compact;

import java.util.ArrayList;

/**
 * Pages given up by their owner while slots freed in them still waited for their epoch
 * ({@link DeferredSlots}): their handle indices were reused already, so these slots cannot go
 * to the {@link Limbo}, which releases by index. A round frees them after its epoch change
 * ({@link #release}); a page adopted again meanwhile leaves the list, its new owner reuses
 * them itself.
 *
 * <p>Invariants: a page is listed at most once ({@link Page#pendingListed}, written under its
 * class's lock, as are its deferred slots once no thread owns it). This object's monitor
 * guards only the list and is never held while a class lock is taken: a give-up adds under
 * the class lock, the round and the statistics copy the list under the monitor and then take
 * each class lock in turn.
 */
final class PendingSlots {

    private final EmptiedPages emptied;
    /** Listed pages (guarded by this). */
    private final ArrayList<Page> pages = new ArrayList<>();

    PendingSlots(EmptiedPages emptied) {
        this.emptied = emptied;
    }

    /** Lists {@code p}, given up with deferred slots (caller holds its class's lock). */
    void add(Page p) {
        if (!p.pendingListed) {
            p.pendingListed = true;
            synchronized (this) {
                pages.add(p);
            }
        }
    }

    synchronized boolean isEmpty() {
        return pages.isEmpty();
    }

    private synchronized Page[] takeAll() {
        Page[] all = pages.toArray(new Page[0]);
        pages.clear();
        return all;
    }

    private synchronized Page[] copy() {
        return pages.toArray(new Page[0]);
    }

    /**
     * Frees the listed pages' slots whose epoch has closed (tag at most {@code closedThrough}),
     * counting them released in their class; pages emptied go to {@link EmptiedPages}. Round
     * thread only (under the round lock), after its epoch change.
     */
    void release(long closedThrough) {
        if (isEmpty()) {
            return;
        }
        for (Page p : takeAll()) {
            SizeClassPages c = p.sizeClass;
            boolean keep = false;
            c.lock.lock();
            try {
                if (p.ownerPages == null && p.pagePos >= 0) { // else adopted again, or the heap closed
                    DeferredSlots d = p.deferred;
                    int n = d.releaseReusable(p, closedThrough);
                    if (n > 0) {
                        c.liveBlocks -= n;
                        c.released += n;
                        c.releasedBytes += d.takenBytes();
                        if (p.used == 0) {
                            c.removePage(p);
                            emptied.add(p);
                        } else {
                            c.refile(p);
                        }
                    }
                    keep = d.count() > 0 && p.pagePos >= 0;
                }
                p.pendingListed = keep;
            } finally {
                c.lock.unlock();
            }
            if (keep) {
                synchronized (this) {
                    pages.add(p);
                }
            }
        }
    }

    /** Adds the listed pages' waiting slots and their bytes to {@code out[0]} and {@code out[1]} (statistics). */
    void addCounters(long[] out) {
        for (Page p : copy()) {
            SizeClassPages c = p.sizeClass;
            c.lock.lock();
            try {
                if (p.ownerPages == null && p.pendingListed) { // an owned page's are its owner's to count
                    out[0] += p.deferred.count();
                    out[1] += p.deferred.bytes();
                }
            } finally {
                c.lock.unlock();
            }
        }
    }
}
