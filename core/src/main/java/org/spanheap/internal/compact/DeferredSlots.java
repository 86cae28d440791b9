package org.spanheap.internal.compact;

/**
 * The frees of one owned page waiting for their epoch to close: killed handle
 * indices (their slots follow from their addresses) in two chains linked
 * through the {@link HandleTable}, each tagged with an epoch number. A slot
 * and its index become reusable once the epoch tagged on their chain has
 * closed: a reader that resolved the object before its free holds a segment
 * of that epoch or an earlier one, and every access through it throws once
 * the epoch is closed.
 *
 * <p>Invariants: the tag of a chain is at least the epoch current at each of
 * its frees (a free reads the epoch number after its kill; a chain taken from
 * the thread-free list is tagged after the take, so after every push in it);
 * the older chain's tag is below the newer's. A free tagged with a later
 * epoch than the newer chain moves the newer chain into the older one (the
 * older takes the larger tag, which only delays reuse), so two chains suffice.
 *
 * <p>Touched by the page's owner only (plain fields): a page changes owner
 * under its class's lock, which orders the old owner's writes before the new
 * owner's reads.
 */
final class DeferredSlots {

    private int head = HandleTable.NO_INDEX, tail;
    private int count;
    private long bytes, epoch;
    private int olderHead = HandleTable.NO_INDEX, olderTail;
    private int olderCount;
    private long olderBytes, olderEpoch;

    int count() {
        return count + olderCount;
    }

    long bytes() {
        return bytes + olderBytes;
    }

    /** {@return the 16-byte units of the deferred frees, as the limbo counts them (each at least one)} */
    long units() {
        return (bytes + olderBytes + 15L * count()) >>> 4;
    }

    /** {@return the last index of the chain {@link #takeAll} returns} (meaningful when {@link #count()} > 0) */
    int tail() {
        return count > 0 ? tail : olderTail;
    }

    /** Adds a chain of {@code n} killed indices from {@code h} to {@code t} holding {@code b} bytes, freed in epoch {@code e} or before. */
    void add(HandleTable table, int h, int t, int n, long b, long e) {
        if (count == 0) {
            head = h;
            tail = t;
            count = n;
            bytes = b;
            epoch = e;
        } else if (e == epoch) {
            table.setLink(t, head);
            head = h;
            count += n;
            bytes += b;
        } else { // e > epoch: epoch numbers only grow, and the owner reads them in order
            if (olderCount == 0) {
                olderHead = head;
                olderTail = tail;
            } else {
                table.setLink(olderTail, head);
                olderTail = tail;
            }
            olderCount += count;
            olderBytes += bytes;
            olderEpoch = epoch;
            head = h;
            tail = t;
            count = n;
            bytes = b;
            epoch = e;
        }
    }

    /**
     * Takes the entries whose epoch has closed (tag at most {@code closedThrough}) as one
     * chain; {@return its head, or NO_INDEX}.
     */
    int takeReusable(HandleTable table, long closedThrough) {
        int out = HandleTable.NO_INDEX;
        if (olderCount > 0 && olderEpoch <= closedThrough) {
            out = olderHead;
            if (count > 0 && epoch <= closedThrough) {
                table.setLink(olderTail, head);
                clearNewer();
            }
            clearOlder();
        } else if (olderCount == 0 && count > 0 && epoch <= closedThrough) {
            out = head;
            clearNewer();
        }
        return out;
    }

    /** Takes every entry as one chain, reusable or not (the page is given up); {@return its head, or NO_INDEX}. */
    int takeAll(HandleTable table) {
        int out;
        if (olderCount > 0) {
            out = olderHead;
            if (count > 0) {
                table.setLink(olderTail, head);
            }
        } else {
            out = count > 0 ? head : HandleTable.NO_INDEX;
        }
        clearOlder();
        clearNewer();
        return out;
    }

    private void clearNewer() {
        head = HandleTable.NO_INDEX;
        count = 0;
        bytes = 0;
    }

    private void clearOlder() {
        olderHead = HandleTable.NO_INDEX;
        olderCount = 0;
        olderBytes = 0;
    }
}
