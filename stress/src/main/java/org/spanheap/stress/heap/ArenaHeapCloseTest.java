package org.spanheap.stress.heap;

import org.spanheap.SpanHeap;

import java.lang.foreign.Arena;
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
 * Heap close racing an arena of that heap on another thread ({@code HeapArena}: the heap
 * reference an arena holds, {@code SpanHeapImpl.acquireRef/releaseRef}).
 *
 * <p>The owner creates a heap and publishes it, opens an arena of it, allocates a small and
 * a large segment from the arena, writes and reads both, and closes the arena. The closer
 * closes the heap if it sees it. Opening the arena either happens before the close (the
 * arena then holds a reference: its segments stay accessible until the arena closes, even
 * after the heap closed) or throws {@link IllegalStateException}. An allocation from an
 * open arena either succeeds or throws {@code IllegalStateException} (heap closed); a
 * segment once allocated must stay readable and writable until the arena closes, and
 * closing the arena must succeed (it frees its blocks, or leaves them to the heap's
 * destruction, which the last reference performs).
 *
 * <p>r1 (owner): 0 newArena refused; 1 arena opened, first allocation refused; 2 small
 * segment used, large allocation refused; 3 both used and the arena closed; 8 another
 * exception or a refused access/close; 9 a read returned a wrong value. r2 (closer): 0 heap
 * not yet published, 1 closed it. r3 (arbiter): 0 the heap is closed, 1 otherwise.
 */
@JCStressTest
@Description("SpanHeap.close() racing an arena of the heap: the arena's segments stay valid until the arena closes.")
@Outcome(id = "3, 0, 0", expect = Expect.ACCEPTABLE, desc = "Closer did not see the heap; the arena did everything.")
@Outcome(id = "3, 1, 0", expect = Expect.ACCEPTABLE, desc = "Both allocations before the heap closed (or after, with both used); arena closed fine.")
@Outcome(id = "0, 1, 0", expect = Expect.ACCEPTABLE, desc = "Heap closed before newArena: refused.")
@Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "Arena opened, heap closed before its first allocation: refused.")
@Outcome(id = "2, 1, 0", expect = Expect.ACCEPTABLE, desc = "Small segment allocated and used, heap closed before the large allocation.")
@Outcome(expect = Expect.FORBIDDEN, desc = "An arena segment unusable before the arena closed, a wrong value, "
        + "a refused arena close, another exception, or an open heap.")
@State
public class ArenaHeapCloseTest {
    static final long RESERVE = 256L << 20;
    static final long LARGE = 2L << 20;
    private static final VarHandle HEAP;
    static {
        try {
            HEAP = MethodHandles.lookup().findVarHandle(ArenaHeapCloseTest.class, "heap", SpanHeap.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused")
    private SpanHeap heap;

    @Actor
    public void owner(III_Result r) {
        SpanHeap h = SpanHeap.builder().reserveBytes(RESERVE).build();
        HEAP.setRelease(this, h);
        try {
            r.r1 = useArena(h);
        } finally {
            h.close();
        }
    }

    private static int useArena(SpanHeap h) {
        Arena arena;
        try {
            arena = h.newArena();
        } catch (IllegalStateException e) {
            return 0;
        }
        int code;
        try {
            code = allocateAndUse(arena);
        } catch (RuntimeException | Error e) {
            code = 8;                            // an access to a live arena segment threw
        }
        try {
            arena.close();
        } catch (RuntimeException | Error e) {
            code = 8;
        }
        return code;
    }

    /** {@return 1, 2 or 3 (see the class comment), or 9}; accesses must not throw */
    private static int allocateAndUse(Arena arena) {
        MemorySegment s;
        try {
            s = arena.allocate(64);
        } catch (IllegalStateException e) {
            return 1;
        }
        if (!fill(s, 64, 42)) {
            return 9;
        }
        MemorySegment l;
        try {
            l = arena.allocate(LARGE);
        } catch (IllegalStateException e) {
            return fill(s, 64, 44) ? 2 : 9;     // still accessible after the heap closed
        }
        return fill(l, LARGE, 43) && fill(s, 64, 44) ? 3 : 9;
    }

    /** Writes v at both ends of s and reads it back; an access to a live arena segment must not throw. */
    private static boolean fill(MemorySegment s, long size, long v) {
        s.set(JAVA_LONG, 0, v);
        s.set(JAVA_LONG, size - 8, v);
        return s.get(JAVA_LONG, 0) == v && s.get(JAVA_LONG, size - 8) == v;
    }

    @Actor
    public void closer(III_Result r) {
        r.r2 = HeapCloseRace.closeIfPublished((SpanHeap) HEAP.getAcquire(this));
    }

    @Arbiter
    public void arbiter(III_Result r) {
        SpanHeap h = (SpanHeap) HEAP.getAcquire(this);
        r.r3 = h != null && !h.isOpen() ? 0 : 1;
    }
}
