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
 * Heap close racing another thread's allocate, access and free ({@code SpanHeapImpl.close}:
 * the closing flag, the lifetime arena's close handshake, scope acquisition by downcalls).
 *
 * <p>The user creates a heap (small reservation) and publishes it (release), then walks
 * through six steps: allocate a small block, write and read it, free it, allocate a large
 * (directly mapped) block, write and read it, free it. The closer closes the heap if it sees
 * it (acquire). Each step either completes or throws {@link IllegalStateException}, and once
 * one step throws, the heap is closed. A crash (an access to unmapped memory) kills the
 * forked VM and fails the test. At the end the user closes the heap too (idempotent), so
 * each state's heap is released before the next state runs; heaps are created in the actor,
 * not the constructor, so only a few exist at once.
 *
 * <p>r1 (user): the number of steps completed (0..6) before the first
 * {@code IllegalStateException}; 8 another exception, 9 a read returned a wrong value.
 * r2 (closer): 0 the heap was not yet published, 1 closed it. r3 (arbiter): 0 the heap is
 * closed and refuses allocation with {@code IllegalStateException}, 1 otherwise.
 */
@JCStressTest
@Description("SpanHeap.close() racing allocate/access/free on another thread: complete or IllegalStateException, never a crash.")
@Outcome(id = "6, 0, 0", expect = Expect.ACCEPTABLE, desc = "Closer did not see the heap; the user did everything, then closed it.")
@Outcome(id = "6, 1, 0", expect = Expect.ACCEPTABLE, desc = "Close came after all six steps.")
@Outcome(id = "0, 1, 0", expect = Expect.ACCEPTABLE, desc = "Closed before the first allocation: refused.")
@Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "Small block allocated, then closed: its access refused.")
@Outcome(id = "2, 1, 0", expect = Expect.ACCEPTABLE, desc = "Small block written and read, then closed: its free refused.")
@Outcome(id = "3, 1, 0", expect = Expect.ACCEPTABLE, desc = "Small block freed, then closed: large allocation refused.")
@Outcome(id = "4, 1, 0", expect = Expect.ACCEPTABLE, desc = "Large block mapped, then closed: its access refused.")
@Outcome(id = "5, 1, 0", expect = Expect.ACCEPTABLE, desc = "Large block written and read, then closed: its free refused.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A step refused although the heap was not closed, a wrong value, "
        + "another exception, or a closed heap that still allocates.")
@State
public class HeapCloseTest {
    static final long RESERVE = 256L << 20;
    static final long LARGE = 2L << 20;
    private static final VarHandle HEAP;
    static {
        try {
            HEAP = MethodHandles.lookup().findVarHandle(HeapCloseTest.class, "heap", SpanHeap.class);
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
            MemorySegment s = h.allocate(64);
            steps = 1;
            s.set(JAVA_LONG, 56, 42);
            if (s.get(JAVA_LONG, 56) != 42) {
                steps = 9;
                return;
            }
            steps = 2;
            h.free(s);
            steps = 3;
            MemorySegment l = h.allocate(LARGE);
            steps = 4;
            l.set(JAVA_LONG, LARGE - 8, 43);
            if (l.get(JAVA_LONG, LARGE - 8) != 43) {
                steps = 9;
                return;
            }
            steps = 5;
            h.free(l);
            steps = 6;
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
