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
 * Access versus move, writer side: a thread writes an object through
 * {@link CompactingHeap#write} while another moves it. The epoch protocol
 * must not lose the write: either it finished before the epoch closed (and
 * was copied), or it failed on the closed epoch and was rerun at the new place.
 */
@JCStressTest
@Description("CompactingHeap: a write racing with a move of the same object is never lost.")
@Outcome(id = "2, 2", expect = Expect.ACCEPTABLE, desc = "The write reached the object's final place.")
@Outcome(id = "1, 1", expect = Expect.FORBIDDEN, desc = "Lost write: written to the old place after the copy.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Partly lost write, or memory of another object.")
@State
public class CompactWriteVsMoveTest {

    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long h;

    public CompactWriteVsMoveTest() {
        h = HEAP.allocate(16);
        HEAP.setLong(h, 0, 1);
        HEAP.setLong(h, 8, 1);
    }

    @Actor
    public void writer() {
        HEAP.write(h, s -> {
            s.set(ValueLayout.JAVA_LONG, 0, 2);
            s.set(ValueLayout.JAVA_LONG, 8, 2);
        });
    }

    @Actor
    public void mover() {
        HEAP.relocate(h);
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        r.r1 = HEAP.getLong(h, 0);
        r.r2 = HEAP.getLong(h, 8);
        HEAP.free(h);
    }
}
