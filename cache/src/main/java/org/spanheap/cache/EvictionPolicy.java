package org.spanheap.cache;

import static org.spanheap.cache.SegmentTable.CHARGE_BITS;
import static org.spanheap.cache.SegmentTable.LINK_BITS;
import static org.spanheap.cache.SegmentTable.LINK_MASK;
import static org.spanheap.cache.SegmentTable.NONE;
import static org.spanheap.cache.SegmentTable.QUEUE_SHIFT;
import static org.spanheap.cache.SegmentTable.REFERENCED;

import java.util.Arrays;

/**
 * The W-TinyLFU policy over one segment's entries (Einziger, Friedman and Manes,
 * "TinyLFU: A Highly Efficient Cache Admission Policy"): three queues linked through the
 * entries' links words in the {@link SegmentTable}, and a {@link FrequencySketch}. Every
 * method expects the segment's lock held.
 *
 * <p>New entries enter the window, a queue of about 1% of the segment's share; what
 * overflows it moves to the probation queue, as a <i>candidate</i> for as long as the write
 * that moved it is making room (a candidate that need not duel, and every entry admitted
 * while the segment had room, stays as a member of probation). An entry hit in probation is
 * promoted to the protected queue (at most 80% of the main region; its overflow is demoted
 * back to probation). To make room, the oldest candidate duels the probation queue's oldest
 * entry: the one the frequency sketch has seen less often is evicted. So a one-time key
 * cannot push out a popular one.
 *
 * <p>The queues are LRU approximated by second chances, as CLOCK does: a hit only marks its
 * entry (and counts in the sketch), and a marked entry that reaches the head of the window
 * or of the protected queue goes round to the tail again, and one at the head of probation
 * is promoted, instead of leaving. Moving a hit entry to its queue's tail at once, as an LRU
 * list does, wrote its two neighbours: two more cache misses on every hit.
 */
final class EvictionPolicy {

    static final int WINDOW = 0;
    static final int PROBATION = 1;
    static final int PROTECTED = 2;

    private final SegmentTable entries;
    final FrequencySketch sketch = new FrequencySketch();
    private long windowMax;
    private long protectedMax;
    private final int[] head = {NONE, NONE, NONE};
    private final int[] tail = {NONE, NONE, NONE};
    private final long[] queueCharge = new long[3];
    /** The oldest entry moved from the window that has not dueled yet, or NONE. */
    private int candidate = NONE;

    EvictionPolicy(SegmentTable entries) {
        this.entries = entries;
    }

    /** The window's and the protected queue's bounds follow from the segment's share. */
    void setShare(long share) {
        this.windowMax = Math.max(1, share / 100);
        this.protectedMax = (share - windowMax) * 4 / 5;
    }

    /** {@return the oldest entry of queue {@code q}, or NONE} */
    int head(int q) {
        return head[q];
    }

    /** A new entry (charged, in no queue): it enters the window and the sketch counts it. */
    void added(int e, int hash, int entryCount) {
        link(e, WINDOW);
        sketch.increment(hash);
        sketch.ensureCapacity(entryCount);
    }

    /** Entry {@code e} leaves the queues (before its slot is freed). */
    void removed(int e) {
        unlink(e);
    }

    /** Entry {@code e}'s charge changed by {@code delta} (its value was replaced). */
    void chargeChanged(int e, long delta) {
        queueCharge[entries.queueOf(e)] += delta;
    }

    /**
     * A hit: counted by the sketch and marked on the entry itself. Nothing moves: the queues
     * are kept in order lazily, by second chances when an entry reaches the head of its queue.
     */
    void accessed(int e) {
        sketch.increment(entries.hashOf(e));
        long l = entries.links(e);
        if ((l & REFERENCED) == 0) {
            entries.setLinks(e, l | REFERENCED);
        }
    }

    /** {@return the sketch's estimate of how often {@code e}'s key was seen} */
    int frequency(int e) {
        return sketch.frequency(entries.hashOf(e));
    }

    /** Forgets every entry: the queues are empty (the sketch keeps its counts). */
    void clear() {
        Arrays.fill(head, NONE);
        Arrays.fill(tail, NONE);
        Arrays.fill(queueCharge, 0);
        candidate = NONE;
    }

    /** A write made room (or did not need to): candidates that did not duel stay in probation as members. */
    void roomMade() {
        candidate = NONE;
    }

    private boolean referenced(int e) {
        return (entries.links(e) & REFERENCED) != 0;
    }

    /**
     * Moves a probation entry that was hit to the protected queue, then demotes the
     * protected queue's overflow to probation, oldest first, except entries hit since they
     * last moved: those go round again (and lose their mark).
     */
    private void promote(int e) {
        moveToTail(e, PROTECTED);
        while (queueCharge[PROTECTED] > protectedMax && head[PROTECTED] != e) {
            int h = head[PROTECTED];
            moveToTail(h, referenced(h) ? PROTECTED : PROBATION);
        }
    }

    /** Moves the window's overflow (oldest first, never {@code keep}) to probation as candidates. */
    void admitFromWindow(int keep) {
        while (queueCharge[WINDOW] > windowMax && head[WINDOW] != NONE && head[WINDOW] != keep) {
            int c = head[WINDOW];
            if (referenced(c)) {
                moveToTail(c, WINDOW); // hit while in the window: it stays (a move clears the mark)
                continue;
            }
            moveToTail(c, PROBATION);
            if (candidate == NONE) {
                candidate = c;
            }
        }
    }

    /**
     * Chooses the entry to evict, never {@code keep} (NONE: any): the loser of the duel
     * between the oldest candidate and the oldest entry of probation, else the oldest entry
     * of the protected queue, else of the window. {@return the entry, or NONE if there is no
     * other} The caller removes it.
     */
    int victim(int keep) {
        int victim = head[PROBATION];
        // entries hit while on probation are promoted, not dueled (each pass clears a mark or moves one out)
        while (victim != NONE && victim != keep && referenced(victim)) {
            promote(victim);
            victim = head[PROBATION];
        }
        while (candidate != NONE && candidate != victim && candidate != keep && referenced(candidate)) {
            promote(candidate); // unlink moves the candidate mark to the entry after it
        }
        int chosen;
        if (candidate != NONE && victim != NONE && victim != candidate) {
            chosen = frequency(candidate) > frequency(victim) ? victim : candidate;
        } else if (victim != NONE) {
            chosen = victim;
        } else if (head[PROTECTED] != NONE) {
            chosen = head[PROTECTED];
        } else {
            chosen = head[WINDOW];
        }
        if (chosen != NONE && chosen == keep) {
            chosen = otherThan(keep);
        }
        if (chosen != NONE && chosen != candidate && candidate != NONE && chosen == victim) {
            candidate = nextOf(candidate); // the candidate won its duel: admitted, the next one duels next time
        }
        return chosen;
    }

    /** The entry after {@code e} in its queue, else the head of another queue; NONE if {@code e} is alone. */
    private int otherThan(int e) {
        int n = nextOf(e);
        if (n != NONE) {
            return n;
        }
        for (int q = WINDOW; q <= PROTECTED; q++) {
            if (head[q] != NONE && head[q] != e) {
                return head[q];
            }
        }
        return NONE;
    }

    // ---- the queues' links, in the entries' links words ----

    private int nextOf(int e) {
        return (int) (entries.links(e) & LINK_MASK) - 1;
    }

    private static long links(int queue, int prev, int next) {
        return (long) queue << QUEUE_SHIFT | (long) (prev + 1) << LINK_BITS | (next + 1);
    }

    private void setNext(int e, int next) {
        entries.setLinks(e, entries.links(e) & ~LINK_MASK | (next + 1));
    }

    private void setPrev(int e, int prev) {
        entries.setLinks(e, entries.links(e) & ~(LINK_MASK << LINK_BITS) | (long) (prev + 1) << LINK_BITS);
    }

    private void moveToTail(int e, int q) {
        unlink(e);
        link(e, q);
    }

    private void link(int e, int q) {
        int t = tail[q];
        entries.setLinks(e, entries.links(e) & CHARGE_BITS | links(q, t, NONE)); // a move clears the mark, keeps the charge
        if (t == NONE) {
            head[q] = e;
        } else {
            setNext(t, e);
        }
        tail[q] = e;
        queueCharge[q] += entries.chargeOf(e);
    }

    private void unlink(int e) {
        long l = entries.links(e);
        int q = (int) (l >>> QUEUE_SHIFT) & 3;
        int p = (int) (l >>> LINK_BITS & LINK_MASK) - 1;
        int n = (int) (l & LINK_MASK) - 1;
        if (e == candidate) {
            candidate = n; // the next candidate, or an entry behind it in probation (NONE at the end)
        }
        if (p == NONE) {
            head[q] = n;
        } else {
            setNext(p, n);
        }
        if (n == NONE) {
            tail[q] = p;
        } else {
            setPrev(n, p);
        }
        queueCharge[q] -= entries.chargeOf(e);
    }
}
