package org.spanheap.stress.compact;

import java.lang.foreign.ValueLayout;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * Handle reuse versus a stale handle: one thread frees an object and
 * allocates a new one of the same size (the heap reclaims on every free, so
 * the table index and the block are reused at once) and writes it; another
 * thread reads through the old handle. The old handle must give the old
 * contents or be refused; it must never reach the new object.
 * r1: 1 if the new handle reused the old one's table index; r2: what the
 * stale reader saw (1 old contents, -1 refused).
 */
@JCStressTest
@Description("CompactingHeap: a stale handle never reaches the object that reuses its entry or block.")
@Outcome(id = {"0, 1", "1, 1"}, expect = Expect.ACCEPTABLE, desc = "Read the old object before its free took effect.")
@Outcome(id = {"0, -1", "1, -1"}, expect = Expect.ACCEPTABLE, desc = "Stale handle refused.")
@Outcome(id = {"0, 2", "1, 2"}, expect = Expect.FORBIDDEN, desc = "Stale handle reached the new object.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Anything else (zeroes, foreign memory).")
@State
public class CompactHandleReuseTest {

    static final CompactingHeap HEAP = CompactHeaps.HEAP;
    final long old;
    long fresh;

    public CompactHandleReuseTest() {
        old = HEAP.allocate(16);
        HEAP.setLong(old, 0, 1);
        HEAP.setLong(old, 8, 1);
    }

    @Actor
    public void reuser(II_Result r) {
        HEAP.free(old);
        fresh = HEAP.allocate(16);
        HEAP.setLong(fresh, 0, 2);
        HEAP.setLong(fresh, 8, 2);
        r.r1 = (int) fresh == (int) old ? 1 : 0;
    }

    @Actor
    public void staleReader(II_Result r) {
        try {
            r.r2 = HEAP.read(old, s -> {
                long a = s.get(ValueLayout.JAVA_LONG, 0);
                long b = s.get(ValueLayout.JAVA_LONG, 8);
                return a == b ? (int) a : 100 + (int) a * 10 + (int) b;
            });
        } catch (StaleHandleException e) {
            r.r2 = -1;
        }
    }

    @Arbiter
    public void arbiter() {
        HEAP.free(fresh);
    }
}
