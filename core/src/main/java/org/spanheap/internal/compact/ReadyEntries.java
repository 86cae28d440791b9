package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * Freed entries of one lane whose epoch has closed, kept whole for reuse: an allocation in the
 * lane takes an entry's index and the slot its block still holds together, so neither the
 * round nor the allocation touches the page's slots or use count. The round hands over the
 * chains it took from the lane's stack of the {@link LaneLimbo} as they are, unread (one chain
 * per round), instead of releasing each slot to its page, whose lines the allocating threads
 * write from other cores.
 *
 * <p>An entry here is dead (killed, its epoch closed, its generation not exhausted) and still
 * holds its slot: its page counts the block as used, and its lane counts it as live
 * ({@link SizeClassPages#liveBlocks}) until it is reused or given back, where its release is
 * counted. So that pages empty and kappa sees their true use, the round gives back what is
 * left here to the pages before it plans moves, when the entries are older than
 * {@link #MAX_AGE_NANOS}, and beyond {@link #cap}. Everything here is touched under the lane's
 * lock. Chains are linked through the table's links (an entry is in one list at a time: a
 * limbo, here, or an index cache) and end at {@code NO_INDEX}.
 */
final class ReadyEntries {

    /** The longest an entry waits here before the round gives its slot back to the page. */
    static final long MAX_AGE_NANOS = Compactor.IDLE_MILLIS * 1_000_000L;
    /** The least {@link #cap}. */
    static final int MIN_CAP = 256;

    /** The chain allocations take from. */
    private int head = HandleTable.NO_INDEX;
    /** Further chains, whole, taken after {@link #head}'s ends (last in, first taken). */
    private int[] chains = new int[4];
    private int chainCount;
    private int count;
    /** {@code System.nanoTime()} when the entries last went from none to some. */
    private long since;

    int count() {
        return count;
    }

    /** {@return the most entries kept for a lane with {@code liveBlocks} live blocks} A sixteenth of them, at least {@value #MIN_CAP}. */
    static long cap(long liveBlocks) {
        return Math.max(MIN_CAP, liveBlocks >> 4);
    }

    /** Adds the chain from {@code first} of {@code n} entries, as it is (caller holds the lane's lock). */
    void addChain(int first, int n, long now) {
        if (count == 0) {
            since = now;
        }
        count += n;
        if (head == HandleTable.NO_INDEX) {
            head = first;
            return;
        }
        if (chainCount == chains.length) {
            chains = Arrays.copyOf(chains, chainCount * 2);
        }
        chains[chainCount++] = first;
    }

    /** {@return an entry to reuse, or {@code NO_INDEX}} (caller holds the lane's lock) */
    int pop(HandleTable table) {
        int i = head;
        if (i == HandleTable.NO_INDEX) {
            if (chainCount == 0) {
                return i;
            }
            i = chains[--chainCount];
        }
        head = table.link(i);
        count--;
        return i;
    }

    /** {@return whether the entries are older than {@link #MAX_AGE_NANOS} at {@code now}} */
    boolean aged(long now) {
        return count > 0 && now - since > MAX_AGE_NANOS;
    }

    /**
     * Adds the entries here and their freed objects' requested bytes to {@code out[0]} and {@code out[1]}
     * (caller holds the lane's lock; a walk through every entry, for the statistics).
     */
    void addPending(HandleTable table, long[] out) {
        table.addChain(head, out);
        for (int k = 0; k < chainCount; k++) {
            table.addChain(chains[k], out);
        }
    }

    /**
     * Takes the next whole chain: {@return its first entry, or {@code NO_INDEX} once none is
     * left} (caller holds the lane's lock). Taking until {@code NO_INDEX} empties this.
     */
    int takeChain() {
        int h = head;
        if (h != HandleTable.NO_INDEX) {
            head = HandleTable.NO_INDEX;
        } else if (chainCount > 0) {
            h = chains[--chainCount];
        } else {
            count = 0;
        }
        return h;
    }
}
