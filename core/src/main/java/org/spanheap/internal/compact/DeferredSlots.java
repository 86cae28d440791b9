package org.spanheap.internal.compact;

/**
 * The slots of one page freed by its owner and waiting for their epoch to close, in two
 * chains linked through the page's {@link Page#owner} array, each tagged with an epoch
 * number. Their handle indices were reused at once (a killed entry's generation moved on, and
 * a resolve loads the state again after the address, so a stale handle never reaches a newer
 * object); the slot becomes reusable once the epoch tagged on its chain has closed: a reader
 * that resolved the object before its free holds a segment of that epoch or an earlier one,
 * and every access through it throws once the epoch is closed.
 *
 * <p>Invariants: the tag of a chain is at least the epoch current at each of its frees (a
 * free reads the epoch number after its kill; slots of a chain taken from the thread-free
 * list are tagged after the take, so after every push in it); the older chain's tag is below
 * the newer's. A free tagged with a later epoch than the newer chain moves the newer chain
 * into the older one (the older takes the larger tag, which only delays reuse), so two chains
 * suffice.
 *
 * <p>Touched by the page's owner only (plain fields) while the page is owned, and under its
 * class's lock once it is given up ({@link PendingSlots}): a page changes owner under that
 * lock, which orders the old owner's writes before the next reader's.
 */
final class DeferredSlots {

    private int head = Page.DEFERRED_END, tail;
    private int count;
    private long bytes, epoch;
    private int olderHead = Page.DEFERRED_END, olderTail;
    private int olderCount;
    private long olderBytes, olderEpoch;
    /** The bytes of the slots the last {@link #releaseReusable} freed. */
    private long takenBytes;

    int count() {
        return count + olderCount;
    }

    long bytes() {
        return bytes + olderBytes;
    }

    /** Adds a chain of {@code n} slots of {@code page} from {@code h} to {@code t} holding {@code b} bytes, freed in epoch {@code e} or before. */
    void add(Page page, int h, int t, int n, long b, long e) {
        if (count == 0) {
            page.linkDeferred(t, Page.DEFERRED_END);
            head = h;
            tail = t;
            count = n;
            bytes = b;
            epoch = e;
        } else if (e == epoch) {
            page.linkDeferred(t, head);
            head = h;
            count += n;
            bytes += b;
        } else { // e > epoch: epoch numbers only grow, and the owner reads them in order
            if (olderCount == 0) {
                olderHead = head;
                olderTail = tail;
            } else {
                page.linkDeferred(olderTail, head);
                olderTail = tail;
            }
            olderCount += count;
            olderBytes += bytes;
            olderEpoch = epoch;
            page.linkDeferred(t, Page.DEFERRED_END);
            head = h;
            tail = t;
            count = n;
            bytes = b;
            epoch = e;
        }
    }

    /**
     * Frees in {@code page} the slots whose epoch has closed (tag at most {@code closedThrough});
     * {@return how many} ({@link #takenBytes()}: their bytes).
     */
    int releaseReusable(Page page, long closedThrough) {
        int taken = 0;
        takenBytes = 0;
        if (olderCount > 0 && olderEpoch <= closedThrough) {
            page.releaseDeferred(olderHead, olderCount);
            taken = olderCount;
            takenBytes = olderBytes;
            olderHead = Page.DEFERRED_END;
            olderCount = 0;
            olderBytes = 0;
        }
        if (olderCount == 0 && count > 0 && epoch <= closedThrough) {
            page.releaseDeferred(head, count);
            taken += count;
            takenBytes += bytes;
            head = Page.DEFERRED_END;
            count = 0;
            bytes = 0;
        }
        return taken;
    }

    /** {@return the bytes of the slots the last {@link #releaseReusable} freed} */
    long takenBytes() {
        return takenBytes;
    }
}
