package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * An owner's free with its handle index reused at once, racing a reader of the freed object:
 * the owner allocates an object in its own page, publishes its handle, frees it (the index
 * goes back to its magazine at once, the slot waits for its epoch) and allocates another
 * object of the same class, which takes that index with the next generation. A reader that
 * got the first handle reads through it. It must read the first object's bytes or be refused
 * (a stale handle, or a segment of a closed epoch), never the second object's.
 * r1: 42 the freed object, -1 not yet published, -2 stale, -3 a closed epoch; 7 the new object.
 */
@JCStressTest
@Description("Thread-owned pages: a stale handle whose index the owner reused never reads the new object.")
@Outcome(id = "42", expect = Expect.ACCEPTABLE, desc = "Read before the free, or of its slot still waiting for its epoch.")
@Outcome(id = "-1", expect = Expect.ACCEPTABLE, desc = "The handle was not yet published.")
@Outcome(id = "-2", expect = Expect.ACCEPTABLE, desc = "Stale handle refused.")
@Outcome(id = "-3", expect = Expect.ACCEPTABLE, desc = "The read's epoch closed under it: refused.")
@Outcome(id = "7", expect = Expect.FORBIDDEN, desc = "The stale handle reached the object that reused its index.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Anything else (a torn read or another object's bytes).")
@State
public class CompactOwnerReuseVsReadTest {

    /** A background thread (so owned pages), frequent rounds. */
    static final CompactingHeap HEAP = CompactHeaps.OWNED;

    volatile long shared;
    long second;

    @Actor
    public void owner() {
        long a = HEAP.allocate(16);
        HEAP.setLong(a, 0, 42);
        shared = a;
        HEAP.free(a);
        long b = HEAP.allocate(16); // the magazine's top: a's index, one generation on
        HEAP.setLong(b, 0, 7);
        second = b;
    }

    @Actor
    public void reader(I_Result r) {
        long h = shared;
        if (h == 0) {
            r.r1 = -1;
            return;
        }
        try {
            r.r1 = (int) HEAP.getLong(h, 0);
        } catch (StaleHandleException e) {
            r.r1 = -2;
        } catch (IllegalStateException e) {
            r.r1 = -3;
        }
    }

    @Arbiter
    public void arbiter() {
        HEAP.free(second);
    }
}
