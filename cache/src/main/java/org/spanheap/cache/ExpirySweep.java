package org.spanheap.cache;

import static org.spanheap.cache.SegmentTable.NONE;

/**
 * Which entries of one segment have expired, and which of them a write removes. Expiry is
 * checked on every lookup (an expired entry is a miss); expired entries leave when the
 * policy evicts them, when a write finds them at the head of a queue or replaces them, or
 * when the whole segment is swept ({@link IndexSegment#expireAll}). An entry's own deadline
 * (when {@link Expiry#deadlines()} is on) is a third bound beside the times after write and
 * after access; the queues are not in deadline order, so each write also checks a few slots
 * at a cursor that goes round all of them, and an entry whose deadline passed leaves within
 * a round of writes even if no one asks for it.
 *
 * <p>The sweep chooses; the segment removes. Every method expects the segment's lock held,
 * except {@link #expired(long[], int, long)}, which a lookup without the lock calls on its
 * racy copy of the entries.
 */
final class ExpirySweep {

    /** Expired entries a write removes from the heads of the queues, at most. */
    static final int HEADS = 4;
    /** Slots a write checks for passed deadlines of their own. */
    static final int DEADLINE_SLOTS = 2;

    private final SegmentTable entries;
    private final EvictionPolicy policy;
    private final long afterWriteNanos;
    private final long afterAccessNanos;
    /** Whether anything in the segment can expire. */
    final boolean expires;
    /** The next slot {@link #nextDeadlineSlot} checks. */
    private int deadlineCursor;

    ExpirySweep(SegmentTable entries, EvictionPolicy policy, Expiry expiry) {
        this.entries = entries;
        this.policy = policy;
        this.afterWriteNanos = expiry.afterWriteNanos();
        this.afterAccessNanos = expiry.afterAccessNanos();
        this.expires = expiry.any();
    }

    /** {@return whether entry {@code e} has expired at {@code now}} */
    boolean expired(int e, long now) {
        return expired(entries.words, e * entries.stride, now);
    }

    /** {@return whether the entry at word {@code at} of {@code words} has expired at {@code now}} */
    boolean expired(long[] words, int at, long now) {
        return (entries.writtenWord >= 0 && now - words[at + entries.writtenWord] >= afterWriteNanos)
                || (entries.accessedWord >= 0 && now - words[at + entries.accessedWord] >= afterAccessNanos)
                || (entries.deadlineWord >= 0 && now - words[at + entries.deadlineWord] >= 0);
    }

    /**
     * {@return an expired entry at the head of a queue (where the times after write and after
     * access come due first), or NONE}
     */
    int expiredHead(long now) {
        for (int q = EvictionPolicy.WINDOW; q <= EvictionPolicy.PROTECTED; q++) {
            int h = policy.head(q);
            if (h != NONE && expired(h, now)) {
                return h;
            }
        }
        return NONE;
    }

    /** {@return whether entries carry deadlines of their own, which follow no queue's order} */
    boolean deadlines() {
        return entries.deadlineWord >= 0;
    }

    /**
     * Moves the cursor on by one slot: {@return the slot it was at if it holds an entry whose
     * deadline has passed, else NONE}
     */
    int nextDeadlineSlot(long now) {
        if (deadlineCursor >= entries.slotsUsed()) {
            deadlineCursor = 0;
        }
        int e = deadlineCursor++;
        return entries.holdsEntry(e) && now - entries.words[e * entries.stride + entries.deadlineWord] >= 0 ? e : NONE;
    }
}
