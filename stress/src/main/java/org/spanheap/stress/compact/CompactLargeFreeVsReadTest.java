package org.spanheap.stress.compact;

import java.lang.foreign.MemorySegment;
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
 * Large objects (a mapping each, unmapped when reclaimed) versus free: one
 * thread reads both ends of a large object through one segment, twice; the
 * other frees it and maps a new large object of the same size (the OS may
 * hand back the same addresses) and fills it. The reader sees the old object
 * whole or is refused, never the new one, and the JVM never touches an
 * unmapped page.
 * r1, r2: the two reads (77 whole, -1 refused).
 */
@JCStressTest
@Description("CompactingHeap: a large object's handle and segment never reach its successor or an unmapped page.")
@Outcome(id = "77, 77", expect = Expect.ACCEPTABLE, desc = "Both reads before the epoch closed.")
@Outcome(id = "77, -1", expect = Expect.ACCEPTABLE, desc = "Reclaimed between the reads: the segment is closed.")
@Outcome(id = "-1, -1", expect = Expect.ACCEPTABLE, desc = "Freed before the resolve.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A torn read, or the next object's bytes.")
@State
public class CompactLargeFreeVsReadTest {

    static final int SIZE = 64 * 1024;
    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long h;

    public CompactLargeFreeVsReadTest() {
        h = HEAP.allocate(SIZE);
        HEAP.setLong(h, 0, 7);
        HEAP.setLong(h, SIZE - 8, 7);
    }

    @Actor
    public void reader(II_Result r) {
        MemorySegment s;
        try {
            s = HEAP.segment(h);
        } catch (StaleHandleException e) {
            r.r1 = -1;
            r.r2 = -1;
            return;
        }
        r.r1 = read(s);
        r.r2 = read(s);
    }

    private static int read(MemorySegment s) {
        try {
            long a = s.get(ValueLayout.JAVA_LONG, 0);
            long b = s.get(ValueLayout.JAVA_LONG, SIZE - 8);
            return (int) (a * 10 + b);
        } catch (IllegalStateException closed) {
            return -1;
        }
    }

    @Actor
    public void freer() {
        HEAP.free(h); // HEAP reclaims at once: the mapping is gone when free returns
        long o = HEAP.allocate(SIZE);
        HEAP.setLong(o, 0, 5);
        HEAP.setLong(o, SIZE - 8, 5);
        HEAP.free(o);
    }
}
