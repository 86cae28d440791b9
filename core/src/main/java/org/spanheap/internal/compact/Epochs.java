package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;

/**
 * A heap's access epochs: the current {@link Epoch}, what the lock-free paths read of it (its
 * universe and number, the last closed number), and the heap's end. Only the round holding
 * {@link Rounds#lock} (or {@code close}, holding it too) changes the epoch.
 *
 * <h2>Memory orders</h2>
 * <ul>
 * <li>{@link #number} is written before {@link #universe}, both volatile. A free reads the number
 *     after its kill to tag a deferred slot: a reader that resolved the object before the kill
 *     read a universe of that epoch or an earlier one (the kill, this read, the publication and
 *     the reader's loads of universe and state are all volatile, so they are totally
 *     ordered).</li>
 * <li>{@link #closedThrough} is written after the old epoch's close returned (volatile): an
 *     owner that reads {@code n} may reuse slots freed in epochs up to {@code n}, which no
 *     segment reaches any more.</li>
 * <li>{@link #closed} is set before the last epoch closes (volatile); every path that would
 *     touch the heap's memory after it checks it, or fails on the closed epoch's segments.</li>
 * </ul>
 */
final class Epochs {

    /** The current epoch (under the round lock). */
    private Epoch current = new Epoch(0);
    /** The current epoch's universe; a resolve reads it first (volatile). */
    volatile MemorySegment universe = current.universe;
    /** The current epoch's number, written before its universe (volatile; see the class comment). */
    volatile long number;
    /** The number of the last closed epoch, -1 before the first close; written after the close (volatile). */
    volatile long closedThrough = -1;
    /** Set when the heap closes, before its last epoch does (volatile). */
    volatile boolean closed;

    // ---- statistics: written under the round lock, read without it ----
    volatile long closedCount, maxCloseNanos;

    /**
     * Publishes the next epoch, then closes the current one (caller holds the round lock);
     * returns the close's nanoseconds. {@code reason} is one of {@link EpochChangeEvent}'s.
     */
    long advance(String reason, String heapName) {
        Epoch old = current;
        Epoch next = new Epoch(old.number + 1);
        current = next;
        number = next.number; // volatile, before the universe
        universe = next.universe; // volatile: MOVING marks and kills before it are seen by resolves of next
        EpochChangeEvent event = new EpochChangeEvent();
        event.begin();
        long t0 = System.nanoTime();
        old.close();
        closedThrough = old.number; // volatile, after the close: deferred slots of this epoch may be reused
        long t = System.nanoTime() - t0;
        event.end();
        if (event.shouldCommit()) {
            event.heap = heapName;
            event.epoch = old.number;
            event.reason = reason;
            event.commit();
        }
        maxCloseNanos = Math.max(maxCloseNanos, t);
        closedCount++;
        return t;
    }

    /**
     * Marks the heap closed and closes the current epoch for good: every access in progress
     * finishes, every later one throws (caller holds the round lock and every class lock).
     * Returns false if it was closed already.
     */
    boolean closeForGood(String heapName) {
        if (closed) {
            return false;
        }
        closed = true;
        EpochChangeEvent event = new EpochChangeEvent();
        event.begin();
        current.close();
        event.end();
        if (event.shouldCommit()) {
            event.heap = heapName;
            event.epoch = current.number;
            event.reason = EpochChangeEvent.CLOSE;
            event.commit();
        }
        return true;
    }

    /** Throws {@link #closedException()} if the heap is closed. */
    void checkOpen() {
        if (closed) {
            throw closedException();
        }
    }

    /** The exception every call on a closed heap throws. */
    static IllegalStateException closedException() {
        return new IllegalStateException("compacting heap is closed");
    }
}
