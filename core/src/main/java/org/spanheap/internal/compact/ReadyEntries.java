package org.spanheap.internal.compact;

/**
 * Freed entries of one lane whose epoch has closed, kept whole for reuse: an allocation in the
 * lane takes an entry's index and the slot its block still holds together, so neither the
 * round nor the allocation touches the page's slots or use count. The round only links the
 * entries here (their table lines are in its cache from the limbo's walk), instead of
 * releasing each slot to its page, whose lines the allocating threads write from other cores.
 *
 * <p>An entry here is dead (killed, its epoch closed, its generation not exhausted), counted
 * as released in its lane, and still holds its slot: its page counts the block as used. So
 * that pages empty and kappa sees their true use, the round releases what is left here to the
 * pages before it plans moves, when the chain is older than {@link #MAX_AGE_NANOS}, and beyond
 * {@link #cap}. Everything here is touched under the lane's lock. Chained through the table's
 * links (an entry is in one list at a time: the limbo, here, or an index cache).
 */
final class ReadyEntries {

    /** The longest an entry waits here before the round gives its slot back to the page. */
    static final long MAX_AGE_NANOS = Compactor.IDLE_MILLIS * 1_000_000L;
    /** The least {@link #cap}. */
    static final int MIN_CAP = 256;

    private int head = HandleTable.NO_INDEX;
    private int count;
    /** {@code System.nanoTime()} when the chain last went from empty to not empty. */
    private long since;

    int count() {
        return count;
    }

    /** {@return the most entries kept for a lane with {@code liveBlocks} live blocks} A sixteenth of them, at least {@value #MIN_CAP}. */
    static long cap(long liveBlocks) {
        return Math.max(MIN_CAP, liveBlocks >> 4);
    }

    /** Links {@code index} at the head (caller holds the lane's lock). */
    void push(HandleTable table, int index, long now) {
        if (head == HandleTable.NO_INDEX) {
            since = now;
        }
        table.setLink(index, head);
        head = index;
        count++;
    }

    /** {@return an entry to reuse, or {@code NO_INDEX}} (caller holds the lane's lock) */
    int pop(HandleTable table) {
        int i = head;
        if (i != HandleTable.NO_INDEX) {
            head = table.link(i);
            count--;
        }
        return i;
    }

    /** {@return whether the chain is older than {@link #MAX_AGE_NANOS} at {@code now}} */
    boolean aged(long now) {
        return count > 0 && now - since > MAX_AGE_NANOS;
    }

    /** Takes the whole chain: {@return its head} (caller holds the lane's lock) */
    int takeAll() {
        int h = head;
        head = HandleTable.NO_INDEX;
        count = 0;
        return h;
    }
}
