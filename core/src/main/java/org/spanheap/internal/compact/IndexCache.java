package org.spanheap.internal.compact;

import static org.spanheap.internal.compact.HandleTable.NO_INDEX;

/**
 * A lane's free handle indices, in two chains linked through the handle table
 * ({@link HandleTable#link}): the one that pushes and pops use, and at most one
 * more set aside. A push onto a chain that holds its limit sets that chain aside
 * and hands the one set aside before it to the table whole; a pop from an empty
 * chain takes the one set aside, else a batch from the table. So the lane keeps
 * at most two limits' worth, and a push or a pop touches one index's link and
 * never walks a chain: a chain's tail is known, and the table splices it in one
 * step ({@link HandleTable#giveChain}). Under churn, where the sizes freed are
 * not the sizes allocated, a lane's indices go back to the table by tens of
 * thousands; walking them there (to cut the chain, then to relink each) cost the
 * background thread a cache miss per index each way.
 *
 * <p>Holds no exhausted index ({@link HandleTable#exhausted}): releases retire
 * those instead of pushing them. Touched only under the lane's lock.
 */
final class IndexCache {

    /** The chain in use: its head, its tail (whose link is {@code NO_INDEX}) and its length. */
    private int head = NO_INDEX, tail = NO_INDEX, count;
    /** The chain set aside, or none ({@code NO_INDEX}, 0). */
    private int spareHead = NO_INDEX, spareTail = NO_INDEX, spareCount;

    /** {@return the indices cached} */
    int count() {
        return count + spareCount;
    }

    /** {@return a free index: a cached one, else one of a batch of {@code batch} taken from {@code table}} */
    int pop(HandleTable table, int batch) {
        if (head == NO_INDEX && !useSpare()) {
            long chain = table.takeChain(batch);
            head = (int) (chain >>> 32);
            tail = (int) chain;
            count = batch;
        }
        return popCached(table);
    }

    /** {@return a cached free index, or {@code NO_INDEX} if none is cached} */
    int popCachedOrNone(HandleTable table) {
        if (head == NO_INDEX && !useSpare()) {
            return NO_INDEX;
        }
        return popCached(table);
    }

    private int popCached(HandleTable table) {
        int i = head;
        head = table.link(i);
        if (--count == 0) {
            tail = NO_INDEX; // head is NO_INDEX too: the tail's link
        }
        return i;
    }

    /** Makes the chain set aside the chain in use; {@return whether there was one} */
    private boolean useSpare() {
        if (spareHead == NO_INDEX) {
            return false;
        }
        head = spareHead;
        tail = spareTail;
        count = spareCount;
        spareHead = spareTail = NO_INDEX;
        spareCount = 0;
        return true;
    }

    /**
     * Caches free index {@code i} (not exhausted). When the chain in use already holds
     * {@code limit} indices it is set aside first, and the chain set aside before it goes
     * back to {@code table}.
     */
    void push(HandleTable table, int i, long limit) {
        if (count >= limit) {
            if (spareHead != NO_INDEX) {
                table.giveChain(spareHead, spareTail, spareCount);
            }
            spareHead = head;
            spareTail = tail;
            spareCount = count;
            head = tail = NO_INDEX;
            count = 0;
        }
        table.setLink(i, head);
        if (head == NO_INDEX) {
            tail = i;
        }
        head = i;
        count++;
    }
}
