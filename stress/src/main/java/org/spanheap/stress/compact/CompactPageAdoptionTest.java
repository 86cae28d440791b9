package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.spanheap.CompactingHeap;

/**
 * A page's ownership passing to another thread: a short-lived thread allocates
 * two small objects in the page it owns, writes one and frees the other (a
 * free deferred in its page), and ends; meanwhile another thread compacts
 * (which gives up the pages of ended threads: the page goes to its lane, where
 * compaction may move its objects, its deferred slot waits for the next round
 * in the heap's pending slots) and
 * allocates an object of the same class (which may adopt that page). The
 * survivor keeps its contents and the new object its own: a slot handed out
 * twice, or a deferred slot reused before the give-up, would overwrite one of them.
 * r1: the survivor's contents; r2: the new object's contents.
 */
@JCStressTest
@Description("Thread-owned pages: an ended thread's page is adopted; its objects and the adopter's stay intact.")
@Outcome(id = "42, 7", expect = Expect.ACCEPTABLE, desc = "Both objects intact.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A slot shared by two objects, or a lost write.")
@State
public class CompactPageAdoptionTest {

    /** A background thread (so owned pages), frequent rounds. */
    static final CompactingHeap HEAP = CompactHeaps.OWNED;

    long survivor;
    long fresh;

    @Actor
    public void shortLivedOwner() {
        Thread t = new Thread(() -> {
            long h = HEAP.allocate(16);
            HEAP.setLong(h, 0, 42);
            long g = HEAP.allocate(16);
            HEAP.setLong(g, 0, 99);
            HEAP.free(g);
            survivor = h;
        });
        t.start();
        boolean interrupted = false;
        for (;;) {
            try {
                t.join(); // the thread's writes (survivor) happen-before the join's return
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Actor
    public void adopter() {
        HEAP.compact();
        long k = HEAP.allocate(16);
        HEAP.setLong(k, 0, 7);
        fresh = k;
    }

    @Arbiter
    public void arbiter(II_Result r) {
        r.r1 = (int) HEAP.getLong(survivor, 0);
        r.r2 = (int) HEAP.getLong(fresh, 0);
        HEAP.free(survivor);
        HEAP.free(fresh);
    }
}
