package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The limbo: killed indices waiting for an epoch change. {@value #STRIPES}
 * Treiber stacks linked through the handle table; a free pushes on the stripe
 * of its thread, a round takes every stripe whole (no pop of one entry, so no
 * ABA). Each stripe is one word:
 * <pre>
 *   63                       32 31                        0
 *  +----------------------------+---------------------------+
 *  | 16-byte units freed in it  | index of the top entry    |
 *  | (saturating; the trigger)  | (0: empty)                |
 *  +----------------------------+---------------------------+
 * </pre>
 *
 * <p>Why stripes: with one word, every free of every thread and the round's
 * drain bounced one cache line, and the round's walk was a single chain of
 * dependent misses. With a stripe per thread (by thread id) two freeing
 * threads rarely share a line, and the round walks the stripes' chains side
 * by side ({@link ReleasePiece#read}), so their misses overlap.
 *
 * <p>A stripe's units also count the frees that went on the lanes' stacks ({@link LaneLimbo},
 * {@link #count}): a stripe whose chain is empty may hold units, and is not empty then. A round
 * drains the stripes before the lanes' stacks, so units added after their entry was taken can
 * only bring one round more, never leave an entry behind with its stripe at zero.
 *
 * <p>Memory order, per stripe: a push writes its entry's link plainly, then
 * CASes the word (volatile), which publishes the link; a drain's getAndSet
 * (volatile) reads the word after every push it sees, so the links of the
 * chain it took are visible to it. Stripes are independent: a round drains
 * them one after the other, all before its epoch change, so every entry a
 * round drains was killed before that change, as with one word.
 *
 * <p>Public, with the members its jcstress test needs (the stress module's
 * {@code LimboPushDrainTest}); the module does not export this package.
 */
public final class Limbo {

    public static final int STRIPES = 4;
    /** Words apart of two stripes: 64 bytes, a cache line each. */
    private static final int SPACING = 8;
    private static final long MAX_UNITS = 0xFFFF_FFFFL;

    private final HandleTable table;
    private final AtomicLongArray words = new AtomicLongArray(STRIPES * SPACING);

    public Limbo(HandleTable table) {
        this.table = table;
    }

    /** {@return the 16-byte units a freed object of {@code size} bytes counts for, at least 1} */
    static long units(long size) {
        return Math.max((size + 15) >>> 4, 1);
    }

    /** {@return the calling thread's stripe} (by thread id; the lane limbo's stacks use it too) */
    static int stripeOfCurrentThread() {
        return (int) (Thread.currentThread().threadId() & (STRIPES - 1));
    }

    /**
     * Pushes the killed {@code index} of an object of {@code size} bytes on the
     * calling thread's stripe; {@return an estimate of the 16-byte units in the
     * whole limbo: this stripe's times the number of stripes} (one load more
     * than the push would be a miss per free on the other stripes' lines).
     */
    long push(int index, long size) {
        return push(stripeOfCurrentThread(), index, size);
    }

    /** {@link #push(int, long)} on stripe {@code stripe} (tests make two threads share one). */
    public long push(int stripe, int index, long size) {
        int at = stripe * SPACING;
        long units = units(size);
        for (;;) {
            long head = words.get(at);
            table.setLink(index, (int) head); // plain: published by the CAS below (volatile)
            long pending = Math.min((head >>> 32) + units, MAX_UNITS);
            if (words.compareAndSet(at, head, pending << 32 | index)) {
                return pending * STRIPES;
            }
        }
    }

    /**
     * Counts a free of {@code size} bytes that went on a lane's stack ({@link LaneLimbo}) in the
     * calling thread's stripe, without an entry, so that the rounds are paced by every freed byte;
     * {@return the estimate {@link #push(int, long)} returns}. An add, not a CAS loop: it never
     * retries. It does not saturate, and cannot reach the top bit: a stripe is drained at every
     * round, and a free waits for one once the limbo holds a few reclaim batches.
     */
    long count(long size) {
        int at = stripeOfCurrentThread() * SPACING;
        long units = units(size);
        return ((words.getAndAdd(at, units << 32) >>> 32) + units) * STRIPES;
    }

    /**
     * Pushes a chain of killed indices, {@code head} to {@code tail} (linked through the
     * table, {@code tail}'s link is rewritten), of {@code units} 16-byte units, on the calling
     * thread's stripe in one CAS; {@return the estimate {@link #push(int, long)} returns}.
     */
    long pushChain(int head, int tail, long units) {
        int at = stripeOfCurrentThread() * SPACING;
        for (;;) {
            long top = words.get(at);
            table.setLink(tail, (int) top); // plain: published by the CAS below (volatile)
            long pending = Math.min((top >>> 32) + units, MAX_UNITS);
            if (words.compareAndSet(at, top, pending << 32 | head)) {
                return pending * STRIPES;
            }
        }
    }

    /** {@return the 16-byte units in the limbo} (volatile reads of every stripe: a hint under concurrent frees) */
    long pendingUnits() {
        long units = 0;
        for (int s = 0; s < STRIPES; s++) {
            units += words.get(s * SPACING) >>> 32;
        }
        return units;
    }

    public boolean isEmpty() {
        for (int s = 0; s < STRIPES; s++) {
            if (words.get(s * SPACING) != 0) {
                return false;
            }
        }
        return true;
    }

    /** Takes every stripe whole: {@code heads[s]} is the top of stripe s's chain ({@link HandleTable#NO_INDEX} if empty). */
    public void drain(int[] heads) {
        for (int s = 0; s < STRIPES; s++) {
            heads[s] = (int) words.getAndSet(s * SPACING, 0);
        }
    }

    /** {@return the top of stripe {@code s}'s chain without taking it} (caller keeps rounds out) */
    int peek(int s) {
        return (int) words.get(s * SPACING);
    }
}
