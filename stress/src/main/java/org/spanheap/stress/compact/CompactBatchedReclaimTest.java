package org.spanheap.stress.compact;

import java.lang.foreign.ValueLayout;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * The batched epoch: a freed block is reused only after a round of the
 * background thread has closed the epoch in which it was freed. One thread
 * reads an object twice through one segment; the other frees it and at once
 * allocates and fills objects of the same class until one of them takes the
 * freed block (the batch is 64 bytes, so the background thread's rounds follow
 * the free closely). The reader sees the old object whole, or is refused
 * (stale handle, or its segment's epoch closed), never the new occupant's bytes.
 * r1: first read, r2: second read through the same segment (77 whole, -1 refused).
 */
@JCStressTest
@Description("CompactingHeap: a background round never lets a reader see a freed block's next owner.")
@Outcome(id = "77, 77", expect = Expect.ACCEPTABLE, desc = "Both reads before the epoch closed.")
@Outcome(id = "77, -1", expect = Expect.ACCEPTABLE, desc = "The epoch closed between the reads.")
@Outcome(id = "-1, -1", expect = Expect.ACCEPTABLE, desc = "Freed before the resolve.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A torn read, or the next owner's bytes.")
@State
public class CompactBatchedReclaimTest {

    static final CompactingHeap HEAP = CompactHeaps.BATCHED;
    final long h;

    public CompactBatchedReclaimTest() {
        h = HEAP.allocate(16);
        HEAP.setLong(h, 0, 7);
        HEAP.setLong(h, 8, 7);
    }

    @Actor
    public void reader(II_Result r) {
        try {
            var s = HEAP.segment(h);
            r.r1 = read(s);
            r.r2 = read(s);
        } catch (StaleHandleException | IllegalStateException e) {
            r.r1 = r.r1 == 77 ? 77 : -1;
            r.r2 = -1;
        }
    }

    private static int read(java.lang.foreign.MemorySegment s) {
        try {
            long a = s.get(ValueLayout.JAVA_LONG, 0);
            long b = s.get(ValueLayout.JAVA_LONG, 8);
            return (int) (a * 10 + b);
        } catch (IllegalStateException closed) {
            return -1;
        }
    }

    @Actor
    public void freer() {
        HEAP.free(h);
        long[] mine = new long[8];
        for (int i = 0; i < mine.length; i++) {
            mine[i] = HEAP.allocate(16);
            HEAP.setLong(mine[i], 0, 5);
            HEAP.setLong(mine[i], 8, 5);
        }
        for (long o : mine) {
            HEAP.free(o);
        }
    }
}
