package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The lock of one size class: a test-and-test-and-set spin lock that yields
 * the core after a short spin. Its critical sections are a few dozen field
 * updates (taking a slot and an index, re-filing a page), far shorter than a
 * park and unpark: with {@code ReentrantLock}, a collision of two threads in
 * one class parked the loser (a futex call each way), and in the churn
 * benchmark the unlock's wake-up was the hottest frame of the allocating
 * threads (docs/compacting-heap.md). Yielding instead of spinning on keeps
 * threads that outnumber cores from burning the holder's time slice. Not
 * reentrant, not fair.
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

    /** 0 free, 1 held. */
    @SuppressWarnings("unused")
    private volatile int state;

    void lock() {
        if (!STATE.compareAndSet(this, 0, 1)) {
            lockSlow();
        }
    }

    private void lockSlow() {
        for (int spins = 0;; spins++) {
            if ((int) STATE.getOpaque(this) == 0 && STATE.compareAndSet(this, 0, 1)) {
                return;
            }
            if (spins < 32) {
                Thread.onSpinWait();
            } else {
                Thread.yield(); // the holder may be descheduled: give it the core
            }
        }
    }

    void unlock() {
        STATE.setRelease(this, 0);
    }
}
