package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Killed indices waiting for an epoch change, {@value #STRIPES} Treiber stacks per lane that
 * keeps {@link ReadyEntries}: a free of a small object pushes its index on a stack of the lane
 * whose page holds the block, the one of the freeing thread's stripe (by thread id, as in the
 * {@link Limbo}), and a round takes each stack whole and hands it, unread, to the lane's ready
 * entries. So the round does O(lanes) work for these frees, where the heap-wide limbo costs it
 * a walk through every freed entry (a cache miss each). The stripes keep two freeing threads
 * off one line: with one stack per lane, the frees of two threads share every stack's line
 * (the cache churn at 2 threads on 2 cores ran at 0.76-0.98x the heap-wide limbo that way,
 * 1.00x with the stripes). Each stack is one word on a cache line of its own:
 * <pre>
 *   63                       32 31                        0
 *  +----------------------------+---------------------------+
 *  | entries in the chain       | index of the top entry    |
 *  |                            | (0: empty)                |
 *  +----------------------------+---------------------------+
 * </pre>
 * The count is exact (a lane has fewer than 2^32 blocks), so the lane knows how many entries it
 * takes without walking them. The bytes that pace the rounds are counted on the heap-wide limbo
 * ({@link Limbo#count}), which the round drains before these stacks.
 *
 * <p>Invariant: a stack's chain, linked through the table from the word's index down to
 * {@code NO_INDEX}, holds exactly the word's count of entries, each killed and in no other list.
 *
 * <p>Memory order, per lane: a push writes its entry's link plainly, then CASes the word
 * (volatile), which publishes the link; a drain's getAndSet (volatile) reads the word after
 * every push it sees, so the links of the chain it took are visible to it. A round drains the
 * stacks before its epoch change, so every entry it takes was killed before that change.
 *
 * <p>Public, with the members its jcstress test needs (the stress module's
 * {@code LaneLimboPushDrainTest}); the module does not export this package.
 */
public final class LaneLimbo {

    /** Stacks per lane: the {@link Limbo}'s stripes. */
    public static final int STRIPES = Limbo.STRIPES;
    /** Words apart of two stacks: 64 bytes, a cache line each. */
    private static final int SPACING = 8;

    private final HandleTable table;
    private final AtomicLongArray words;

    /** @param lanes the heap's number of lanes ({@link SizeClassPages#index} is below it) */
    public LaneLimbo(HandleTable table, int lanes) {
        this.table = table;
        this.words = new AtomicLongArray(lanes * STRIPES * SPACING);
    }

    /** Pushes the killed {@code index} on lane {@code lane}'s stack of the calling thread's stripe. */
    void push(int lane, int index) {
        push(lane, Limbo.stripeOfCurrentThread(), index);
    }

    /** {@link #push(int, int)} on stripe {@code stripe} (tests make two threads share one). */
    public void push(int lane, int stripe, int index) {
        int at = (lane * STRIPES + stripe) * SPACING;
        for (;;) {
            long word = words.get(at);
            table.setLink(index, (int) word); // plain: published by the CAS below (volatile)
            if (words.compareAndSet(at, word, (word & ~0xFFFF_FFFFL) + (1L << 32) | index)) {
                return;
            }
        }
    }

    /**
     * Takes stripe {@code stripe}'s stack of lane {@code lane} whole: {@return its word}
     * ({@link #head} and {@link #count} read it), 0 if it was empty. An empty stack costs a
     * load, no write.
     */
    public long drain(int lane, int stripe) {
        int at = (lane * STRIPES + stripe) * SPACING;
        return words.get(at) == 0 ? 0 : words.getAndSet(at, 0);
    }

    /** {@return the top entry of a stack's {@code word}} */
    public static int head(long word) {
        return (int) word;
    }

    /** {@return the entries in the chain of a stack's {@code word}} */
    public static int count(long word) {
        return (int) (word >>> 32);
    }

    /**
     * Adds the entries on lane {@code lane}'s stacks and their freed objects' requested bytes to
     * {@code out[0]} and {@code out[1]}, without taking them (caller keeps rounds out; a walk,
     * for the statistics).
     */
    void addPending(int lane, long[] out) {
        for (int s = 0; s < STRIPES; s++) {
            table.addChain(head(words.get((lane * STRIPES + s) * SPACING)), out);
        }
    }
}
