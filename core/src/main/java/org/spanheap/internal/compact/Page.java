package org.spanheap.internal.compact;

/**
 * A page of one size class: {@code blocksPerPage} blocks of {@code blockSize}
 * bytes from {@code base}. Java-side bookkeeping only (the page's memory is
 * all user data); touched only under its size class's lock.
 *
 * <p>{@code owner[slot]} is the handle index whose block sits in that slot,
 * or, for a free slot, a negative number that links the free slots: {@code
 * -2 - next} ({@code -1}: the last). Compact-fit stores the abstract address
 * in the object so that a block chosen for moving finds its A2C entry in O(1);
 * we keep it beside the page instead, so objects carry no header. The free
 * list threaded through it (instead of a second array, 4 bytes per block less)
 * hands out the slot freed last, and slot 0 first on a new page.
 */
final class Page {

    final long base;
    final SizeClassPages sizeClass;
    final int[] owner;
    /** The first free slot, or -1. */
    private int freeHead;
    int used;
    /** Position in the class's not-full list, or -1. */
    int notFullPos = -1;
    /** {@code System.nanoTime()} when the page last joined the not-full list. */
    long notFullSince;
    /** Position in the class's list of all pages. */
    int pagePos = -1;
    /** Set while a compaction round moves blocks out of this page: allocation avoids it. */
    boolean evacuating;

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
        return (int) ((address - base) / sizeClass.blockSize);
    }

    /** Takes a free slot for handle index {@code index} (the page must not be full). */
    int take(int index) {
        int slot = freeHead;
        freeHead = -2 - owner[slot];
        owner[slot] = index;
        used++;
        return slot;
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
