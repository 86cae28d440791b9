package org.spanheap.stress.compact;

import java.lang.foreign.ValueLayout;
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
 * Access versus move, reader side: a thread reads an object (two words)
 * through {@link CompactingHeap#read} while another moves it and then
 * allocates into the class (so the released old block is reused at once). The
 * reader must see the object whole: never half old place, half new, never
 * the zeroes or contents of a block that now belongs to someone else.
 */
@JCStressTest
@Description("CompactingHeap: a read racing with a move of the same object sees the object whole.")
@Outcome(id = "7, 7", expect = Expect.ACCEPTABLE, desc = "The object, read at its old or its new place.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Torn read or memory of another object.")
@State
public class CompactReadVsMoveTest {

    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long h;
    long other;

    public CompactReadVsMoveTest() {
        h = HEAP.allocate(16);
        HEAP.setLong(h, 0, 7);
        HEAP.setLong(h, 8, 7);
    }

    @Actor
    public void reader(JJ_Result r) {
        long[] v = HEAP.read(h, s -> new long[] {s.get(ValueLayout.JAVA_LONG, 0), s.get(ValueLayout.JAVA_LONG, 8)});
        r.r1 = v[0];
        r.r2 = v[1];
    }

    @Actor
    public void mover() {
        HEAP.relocate(h);
        // the old block was released by the move: take it at once and fill it with other contents
        other = HEAP.allocate(16);
        HEAP.setLong(other, 0, 9);
        HEAP.setLong(other, 8, 9);
    }

    @Arbiter
    public void arbiter() {
        HEAP.free(h);
        HEAP.free(other);
    }
}
