package org.spanheap.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The references that keep an engine's memory alive: 1 for the heap itself, plus one per
 * open arena, compacting heap page source or other holder. The last {@link #release()}
 * tells the engine to give its memory back; once the count is 0 no {@link #tryAcquire()}
 * succeeds again.
 *
 * <p>Alone on its cache lines: arenas CAS it when they open and close, and it must not share
 * a line with the read-only fields every allocation reads (field layout puts the padding of
 * the superclasses before and after the count).
 */
final class HeapRefCount extends HeapRefCountPadAfter {
    private static final VarHandle COUNT;
    static {
        try {
            COUNT = MethodHandles.lookup().findVarHandle(HeapRefCountValue.class, "count", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** {@return whether a reference was taken: false once the count has dropped to 0} */
    boolean tryAcquire() {
        int v;
        do {
            v = count;                              // volatile load
            if (v <= 0) {
                return false;
            }
        } while (!COUNT.compareAndSet(this, v, v + 1));
        return true;
    }

    /** {@return whether this release dropped the last reference} getAndAdd (volatile). */
    boolean release() {
        return (int) COUNT.getAndAdd(this, -1) == 1;
    }
}

// The padding around the count: superclasses' fields are laid out before a subclass's.
@SuppressWarnings("unused")
class HeapRefCountPadBefore {
    long p00, p01, p02, p03, p04, p05, p06, p07;
    long p10, p11, p12, p13, p14, p15, p16;
}

class HeapRefCountValue extends HeapRefCountPadBefore {
    /** Starts at 1 (the heap's own reference); 0 = released. CAS / getAndAdd (volatile). */
    volatile int count = 1;
}

@SuppressWarnings("unused")
class HeapRefCountPadAfter extends HeapRefCountValue {
    long q00, q01, q02, q03, q04, q05, q06, q07;
    long q10, q11, q12, q13, q14, q15, q16;
}
