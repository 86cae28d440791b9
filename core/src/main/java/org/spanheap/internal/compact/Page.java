package org.spanheap.internal.compact;

/**
 * A page of one size class: {@code blocksPerPage} blocks of {@code blockSize}
 * bytes from {@code base}. Java-side bookkeeping only (the page's memory is
 * all user data). Its slots and counts are touched under its size class's
 * lock while no thread owns it, and by its owner alone, without a lock, while
 * one does ({@link PageOwnership}): ownership passes only under that lock.
 *
 * <p>{@code owner[slot]} is the handle index whose block sits in that slot,
 * or, for a free slot, a negative number that links the free slots: {@code
 * -2 - next} ({@code -1}: the last), or {@link Evacuation#MOVED_OUT} (0) for a
 * slot whose block moved away and whose release waits for an epoch change, or,
 * for a slot freed by its page's owner and waiting for its epoch to close
 * ({@link DeferredSlots}), a link of that chain: {@code DEFERRED_END + 1 + next}
 * ({@link #DEFERRED_END}: the last), below every free link. Compact-fit stores the abstract address
 * in the object so that a block chosen for moving finds its A2C entry in O(1);
 * we keep it beside the page instead, so objects carry no header. The free
 * list threaded through it (instead of a second array, 4 bytes per block less)
 * hands out the slot freed last, and slot 0 first on a new page.
 */
final class Page {

    final long base;
    final SizeClassPages sizeClass;
    final int[] owner;
    /** This page's name in the handle table ({@link PageIds}); 0 before it is registered and after. */
    int id;
    /** The first free slot, or -1. */
    private int freeHead;
    int used;
    /** Position in the class's not-full list, or -1. */
    int notFullPos = -1;
    /** {@code System.nanoTime()} when the page last joined the not-full list. */
    long notFullSince;
    /** Position in the class's list of all pages. */
    int pagePos = -1;
    /**
     * Set while a compaction round moves blocks out of this page, and while slots of it wait
     * for their release one epoch after a move ({@link #movedOut}): allocation and adoption avoid it.
     */
    boolean evacuating;
    /** Slots marked {@link Evacuation#MOVED_OUT}: released after the next epoch change. */
    int movedOut;
    /** Moves a round planned into this page and has not yet published: no thread may adopt it meanwhile. */
    int movesIn;
    /**
     * Moves a round planned out of this page and has not yet published: it stays {@link #evacuating}
     * meanwhile, even when the release of an earlier round's moved-out slots leaves it none.
     */
    int movesOut;
    /**
     * The thread that owns this page, or null (the size class's lock guards it then). Written
     * only under the class's lock; read without it by a freeing thread, which acts on it only
     * when it names itself (see {@link PageOwnership}).
     */
    ThreadPages ownerPages;
    /**
     * Frees by threads other than the owner: {@link RemoteFrees#CLOSED} while no thread owns
     * the page, else the head of a chain of killed handle indices (linked through the table).
     */
    final RemoteFrees remoteFree = new RemoteFrees();
    /** The owner's frees waiting for their epoch to close (touched by the owner only); null until first owned. */
    DeferredSlots deferred;

    /** The end of a chain of deferred slots in {@link #owner}; a link to slot {@code s} is {@code DEFERRED_END + 1 + s}. */
    static final int DEFERRED_END = Integer.MIN_VALUE;
    /**
     * Set while the page, given up with deferred slots, is in the heap's {@link PendingSlots}
     * (written under the class's lock).
     */
    boolean pendingListed;

    Page(long base, SizeClassPages sizeClass) {
        this.base = base;
        this.sizeClass = sizeClass;
        int n = sizeClass.blocksPerPage;
        this.owner = new int[n];
        for (int i = 0; i < n; i++) {
            owner[i] = i + 1 < n ? -2 - (i + 1) : -1; // slot 0 first, then in order
        }
        this.freeHead = n > 0 ? 0 : -1;
    }

    boolean isFull() {
        return used == sizeClass.blocksPerPage;
    }

    int freeCount() {
        return sizeClass.blocksPerPage - used;
    }

    long addressOf(int slot) {
        return base + (long) slot * sizeClass.blockSize;
    }

    /** {@return the slot in this page of the block at {@code address}} */
    int slotOf(long address) {
        return sizeClass.slotAt(address - base);
    }

    /** {@return whether a slot is free now} */
    boolean hasFree() {
        return freeHead >= 0;
    }

    /** Takes a free slot for handle index {@code index} (the page must not be full). */
    int take(int index) {
        int slot = freeHead;
        freeHead = -2 - owner[slot];
        owner[slot] = index;
        used++;
        return slot;
    }

    /** Links slot {@code slot}, whose block was freed, to the deferred chain that continues at {@code next} (or {@link #DEFERRED_END}). */
    void linkDeferred(int slot, int next) {
        owner[slot] = next == DEFERRED_END ? DEFERRED_END : DEFERRED_END + 1 + next;
    }

    /** {@return the slot after {@code slot} in its deferred chain, or {@link #DEFERRED_END}} */
    int nextDeferred(int slot) {
        int v = owner[slot];
        return v == DEFERRED_END ? DEFERRED_END : v - DEFERRED_END - 1;
    }

    /** Frees the {@code n} slots of the deferred chain from {@code head}: their epoch has closed. */
    void releaseDeferred(int head, int n) {
        int f = freeHead;
        for (int s = head; s != DEFERRED_END;) {
            int next = nextDeferred(s);
            owner[s] = -2 - f;
            f = s;
            s = next;
        }
        freeHead = f;
        used -= n;
    }

    void release(int slot) {
        if (owner[slot] < 0) {
            throw new AssertionError("slot " + slot + " of page 0x" + Long.toHexString(base) + " already free");
        }
        owner[slot] = -2 - freeHead;
        freeHead = slot;
        used--;
    }
}
