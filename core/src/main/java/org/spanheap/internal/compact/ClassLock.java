package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The lock of one size class's allocation lane: a test-and-test-and-set spin lock that yields
 * the core after a short spin. Its critical sections are a few dozen field
 * updates (taking a slot and an index, re-filing a page), far shorter than a
 * park and unpark: with {@code ReentrantLock}, a collision of two threads in
 * one class parked the loser (a futex call each way), and in the churn
 * benchmark the unlock's wake-up was the hottest frame of the allocating
 * threads (docs/compacting-heap.md). Yielding instead of spinning on keeps
 * threads that outnumber cores from burning the holder's time slice; after
 * that a waiter parks for a moment, so that a holder that is a virtual thread
 * gets a carrier. Not reentrant, not fair.
 *
 * <p>Memory orders: the CAS that takes the lock has volatile semantics (an
 * acquire), and the release store that frees it orders every write of the
 * critical section before the next holder's CAS.
 */
final class ClassLock {

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(ClassLock.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** How long a waiter that spun and yielded in vain parks before it tries again. */
    private static final long PARK_NANOS = 20_000;

    /** 0 free, 1 held. */
    @SuppressWarnings("unused")
    private volatile int state;

    void lock() {
        if (!STATE.compareAndSet(this, 0, 1)) {
            lockSlow();
        }
    }

    /** {@return whether the lock was free and is now held} Reads before the CAS: a held lock's line stays shared. */
    boolean tryLock() {
        return (int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1);
    }

    private void lockSlow() {
        for (int spins = 0;; spins++) {
            if ((int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1)) {
                return;
            }
            if (spins < 32) {
                Thread.onSpinWait();
            } else if (spins < 64) {
                Thread.yield(); // the holder may be descheduled: give it the core
            } else {
                // Still held: the holder is a virtual thread waiting for a carrier (it blocked on
                // a monitor inside the lock), and spinners that only yield are picked again
                // first by their carrier's queue, so it never runs (a soak with 256 virtual
                // threads stalled so). A timed park frees the carrier for it.
                LockSupport.parkNanos(this, PARK_NANOS);
            }
        }
    }

    void unlock() {
        STATE.setRelease(this, 0);
    }
}
