package org.spanheap.stress.compact;

import java.lang.foreign.ValueLayout;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * Free versus move: one thread frees an object and at once allocates and
 * fills a block of the same class (the heap reclaims on every free, so the
 * freed block can be that one); the other moves the object, then reads it.
 * The free succeeds exactly once; the move happens before the free or is
 * refused as stale; the read sees the object whole or is refused, never the
 * block's next owner. A refused move means the free came first, so the read
 * after it must be refused too.
 * r1: free (1 ok, 0 refused), r2: move (1 moved, 0 refused), r3: read (77 whole, -1 refused).
 */
@JCStressTest
@Description("CompactingHeap: free and move of the same object race safely.")
@Outcome(id = "1, 1, 77", expect = Expect.ACCEPTABLE, desc = "Moved and read before the free.")
@Outcome(id = "1, 1, -1", expect = Expect.ACCEPTABLE, desc = "Moved, then freed before the read.")
@Outcome(id = "1, 0, -1", expect = Expect.ACCEPTABLE, desc = "Freed first: move and read refused.")
@Outcome(id = "1, 0, 77", expect = Expect.FORBIDDEN, desc = "Move refused as freed, yet the read succeeded.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Free refused, or a read of foreign memory.")
@State
public class CompactFreeVsMoveTest {

    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long h;

    public CompactFreeVsMoveTest() {
        h = HEAP.allocate(16);
        HEAP.setLong(h, 0, 7);
        HEAP.setLong(h, 8, 7);
    }

    @Actor
    public void freer(III_Result r) {
        try {
            HEAP.free(h);
            r.r1 = 1;
        } catch (StaleHandleException e) {
            r.r1 = 0;
        }
        long o = HEAP.allocate(16);
        HEAP.setLong(o, 0, 5);
        HEAP.setLong(o, 8, 5);
        HEAP.free(o);
    }

    @Actor
    public void moverThenReader(III_Result r) {
        try {
            HEAP.relocate(h);
            r.r2 = 1;
        } catch (StaleHandleException e) {
            r.r2 = 0;
        }
        try {
            r.r3 = HEAP.read(h, s -> {
                long a = s.get(ValueLayout.JAVA_LONG, 0);
                long b = s.get(ValueLayout.JAVA_LONG, 8);
                return (int) (a * 10 + b);
            });
        } catch (StaleHandleException e) {
            r.r3 = -1;
        }
    }
}
