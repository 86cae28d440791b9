package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * Up to {@value #CAPACITY} entries of a drained limbo list, read into arrays
 * and grouped by size class before any class lock is taken. Round thread only.
 *
 * <p>Why arrays: the limbo's stripes are lists linked through the handle
 * table, so each walk is a chain of dependent loads, a cache miss each. An
 * entry's page, address and state do not depend on the walk, so reading them
 * in the same loop lets the processor overlap their misses with the chains'
 * instead of paying them one after the other later, under the class lock. Large objects
 * (no page) are grouped after the last class.
 */
final class ReleasePiece {

    static final int CAPACITY = 256;

    private final int[] index = new int[CAPACITY];
    /** Page ids, not pages: an int store needs no GC barrier ({@link PageIds}). */
    private final int[] pageId = new int[CAPACITY];
    private PageIds pageIds;
    private final long[] address = new long[CAPACITY];
    private final long[] state = new long[CAPACITY];
    /** Positions in the arrays above, grouped by class: group c is {@code [start[c], start[c + 1])}. */
    private final int[] byClass = new int[CAPACITY];
    private final int[] start;
    private int count;

    /** @param classes the heap's number of size classes (large objects make one group more) */
    ReleasePiece(int classes) {
        this.start = new int[classes + 2];
    }

    /**
     * Reads at most {@link #CAPACITY} entries from the chains whose next
     * entries are {@code cursors}, one step of each chain in turn (their
     * misses are independent, so the processor overlaps them), and groups
     * them. Moves each cursor past what was read (NO_INDEX at a chain's end).
     */
    void read(HandleTable table, int[] cursors) {
        pageIds = table.pageIds;
        int n = 0;
        for (boolean more = true; more && n < CAPACITY;) {
            more = false;
            for (int c = 0; c < cursors.length && n < CAPACITY; c++) {
                int i = cursors[c];
                if (i == HandleTable.NO_INDEX) {
                    continue;
                }
                index[n] = i;
                pageId[n] = table.pageIdOf(i);
                address[n] = table.address(i);
                state[n] = table.stateAcquire(i); // a kill keeps the size
                n++;
                cursors[c] = i = table.link(i);
                more |= i != HandleTable.NO_INDEX;
            }
        }
        count = n;
        group();
    }

    /** Counting sort of the positions by class (large last): O(n + classes), stable. */
    private void group() {
        int large = start.length - 2;
        Arrays.fill(start, 0);
        for (int k = 0; k < count; k++) {
            start[groupOf(k, large) + 1]++;
        }
        for (int c = 1; c < start.length; c++) {
            start[c] += start[c - 1];
        }
        // start[c] is now where group c begins; filling moves it to where the group ends, which is
        // where group c + 1 begins: shift back by one group after
        for (int k = 0; k < count; k++) {
            byClass[start[groupOf(k, large)]++] = k;
        }
        for (int c = start.length - 1; c > 0; c--) {
            start[c] = start[c - 1];
        }
        start[0] = 0;
    }

    private int groupOf(int k, int large) {
        Page p = pageIds.get(pageId[k]);
        return p == null ? large : p.sizeClass.index;
    }

    /** {@return the first position in {@link #byClass} of group {@code c}} The last group is the large objects. */
    int groupStart(int c) {
        return start[c];
    }

    /** {@return the end (exclusive) of group {@code c}} */
    int groupEnd(int c) {
        return start[c + 1];
    }

    /** {@return the array position of the {@code k}-th entry in class order} */
    int at(int k) {
        return byClass[k];
    }

    int index(int pos) {
        return index[pos];
    }

    Page page(int pos) {
        return pageIds.get(pageId[pos]);
    }

    long address(int pos) {
        return address[pos];
    }

    long state(int pos) {
        return state[pos];
    }

    /** Empties the piece. */
    void clear() {
        count = 0;
    }
}
