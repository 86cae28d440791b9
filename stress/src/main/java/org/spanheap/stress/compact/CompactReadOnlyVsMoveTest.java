package org.spanheap.stress.compact;

import java.lang.foreign.MemorySegment;
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
 * A read-only resolve racing a move, with the old place reused at once. {@link
 * CompactingHeap#readOnlySegment} does not wait while the object is MOVING: it may return the
 * old place. The protocol that makes that safe (see {@code Evacuation}): the old slot is
 * released only after the epoch that follows the move has closed too, so a segment that names
 * it dies (every access throws {@link IllegalStateException}) before the slot holds another
 * object; the new place is published with a release store after the copy, so a segment that
 * names it sees the copied bytes. The mover relocates the object and then allocates into the
 * class, taking the released slot, and fills it with other contents. The reader, with no
 * rerun of its own, must see the object whole or a closed segment: never the zeroes or the
 * contents of the object that took the old place.
 */
@JCStressTest
@Description("CompactingHeap: a read-only segment resolved while the object moves sees the object or is closed.")
@Outcome(id = "7, 7", expect = Expect.ACCEPTABLE, desc = "The object, read at its old or its new place.")
@Outcome(id = "-1, -1", expect = Expect.ACCEPTABLE, desc = "The segment's epoch closed during the read.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Torn read or memory of another object.")
@State
public class CompactReadOnlyVsMoveTest {

    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long h;
    long other;

    public CompactReadOnlyVsMoveTest() {
        h = HEAP.allocate(16);
        HEAP.setLong(h, 0, 7);
        HEAP.setLong(h, 8, 7);
    }

    @Actor
    public void reader(JJ_Result r) {
        MemorySegment s = HEAP.readOnlySegment(h);
        try {
            long first = s.get(ValueLayout.JAVA_LONG, 0);
            long second = s.get(ValueLayout.JAVA_LONG, 8);
            r.r1 = first;
            r.r2 = second;
        } catch (IllegalStateException closed) {
            Thread.interrupted(); // JDK-8306324: a close that stops an access leaves the interrupt status set
            r.r1 = -1;
            r.r2 = -1;
        }
    }

    @Actor
    public void mover() {
        HEAP.relocate(h);
        // the old place is released by now: take it at once and fill it with other contents
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
