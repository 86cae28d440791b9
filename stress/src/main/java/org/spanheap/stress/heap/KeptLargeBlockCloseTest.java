package org.spanheap.stress.heap;

import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A freed large block kept with its scope open ({@code KeptLargeBlocks}) and handed out
 * again, racing the heap's close: the free that keeps the block, the allocation that takes
 * it back and gives its scope to a new segment ({@code OwnScopes.adopt}), and the close that
 * must close every kept or adopted scope before the native heap unmaps the block.
 *
 * <p>The user allocates a 2 MiB block, frees it (kept), allocates 2 MiB again (the kept
 * block, zeroed), checks that its last long reads 0, writes and reads it, and frees it. Each
 * step completes or throws {@link IllegalStateException}; once one throws, the heap is
 * closed. A scope left open over unmapped memory would let a later step fault the forked VM,
 * which fails the test.
 *
 * <p>r1 (user): steps completed (0..5) before the first {@code IllegalStateException};
 * 8 another exception, 9 a wrong value. r2 (closer): 0 the heap was not yet published,
 * 1 closed it. r3 (arbiter): 0 the closed heap refuses an allocation, 1 otherwise.
 */
@JCStressTest
@Description("A kept large block freed and taken back while the heap closes: complete or IllegalStateException, never a crash.")
@Outcome(id = "5, 0, 0", expect = Expect.ACCEPTABLE, desc = "Closer did not see the heap; the user did everything, then closed it.")
@Outcome(id = "5, 1, 0", expect = Expect.ACCEPTABLE, desc = "Close came after all five steps.")
@Outcome(id = "0, 1, 0", expect = Expect.ACCEPTABLE, desc = "Closed before the first allocation: refused.")
@Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "First block allocated, then closed: its free refused.")
@Outcome(id = "2, 1, 0", expect = Expect.ACCEPTABLE, desc = "Freed (kept), then closed: the second allocation refused.")
@Outcome(id = "3, 1, 0", expect = Expect.ACCEPTABLE, desc = "Kept block taken back, then closed: its access refused.")
@Outcome(id = "4, 1, 0", expect = Expect.ACCEPTABLE, desc = "Taken back, written and read, then closed: its free refused.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A step refused although the heap was not closed, a wrong value, "
        + "another exception, or a closed heap that still allocates.")
@State
public class KeptLargeBlockCloseTest {
    static final long RESERVE = 256L << 20;
    static final long LARGE = 2L << 20;
    private static final VarHandle HEAP;
    static {
        try {
            HEAP = MethodHandles.lookup().findVarHandle(KeptLargeBlockCloseTest.class, "heap", SpanHeap.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Published by the user with a release store, read by the closer with acquire. */
    @SuppressWarnings("unused")
    private SpanHeap heap;

    @Actor
    public void user(III_Result r) {
        SpanHeap h = SpanHeap.builder().reserveBytes(RESERVE).build();
        HEAP.setRelease(this, h);
        int steps = 0;
        try {
            MemorySegment first = h.allocateUninitialized(LARGE);
            first.set(JAVA_LONG, LARGE - 8, 41);
            steps = 1;
            h.free(first);                        // kept, its scope open
            steps = 2;
            MemorySegment again = h.allocate(LARGE); // the kept block with the same scope, zeroed
            steps = 3;
            if (again.get(JAVA_LONG, LARGE - 8) != 0) {
                steps = 9;
                return;
            }
            again.set(JAVA_LONG, LARGE - 8, 43);
            if (again.get(JAVA_LONG, LARGE - 8) != 43) {
                steps = 9;
                return;
            }
            steps = 4;
            h.free(again);
            steps = 5;
        } catch (IllegalStateException e) {
            // closed: steps tells how far we got
        } catch (RuntimeException | Error e) {
            steps = 8;
        } finally {
            r.r1 = steps;
            h.close();
        }
    }

    @Actor
    public void closer(III_Result r) {
        r.r2 = HeapCloseRace.closeIfPublished((SpanHeap) HEAP.getAcquire(this));
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r3 = HeapCloseRace.refusesAllocationOnceClosed((SpanHeap) HEAP.getAcquire(this));
    }
}
