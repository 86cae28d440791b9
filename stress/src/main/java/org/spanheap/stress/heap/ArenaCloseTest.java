package org.spanheap.stress.heap;

import org.spanheap.HeapStats;
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
 * Arena close racing another thread's access and the heap's other users ({@code HeapArena}:
 * confinement, close frees every block through the owner's cache).
 *
 * <p>The owner opens an arena of a shared heap, allocates a small, a page-aligned and a large
 * segment, publishes the small one (release), and closes the arena. The other thread reads
 * the published segment: an arena is confined, so the access throws
 * {@link WrongThreadException} (or {@link IllegalStateException} once the arena is closed),
 * never returns memory; meanwhile it allocates and frees blocks of the same classes on the
 * shared heap. The arbiter (no actor running) checks that nothing is live: every block the
 * arena got was freed by its close, none lost, none freed twice.
 *
 * <p>r1 (owner): 0 fine; 9 an arena access or the close failed. r2 (other): 0 nothing
 * published yet; 1 {@code WrongThreadException}; 2 {@code IllegalStateException}; 9 the
 * access succeeded or threw something else. r3 (arbiter): 0 no live bytes and no large
 * object left, 1 otherwise.
 */
@JCStressTest
@Description("Arena close racing another thread's access and allocation: confined access refused, no block lost.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = "Segment not yet published; nothing lost.")
@Outcome(id = "0, 1, 0", expect = Expect.ACCEPTABLE, desc = "Access from another thread refused (WrongThreadException); nothing lost.")
@Outcome(id = "0, 2, 0", expect = Expect.ACCEPTABLE, desc = "Access refused because the arena was closed (IllegalStateException); nothing lost.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A confined segment accessed from another thread, an arena failure, or blocks lost.")
@State
public class ArenaCloseTest {
    static final SpanHeap HEAP = SpanHeap.create();
    static final long LARGE = (1L << 20) + 4096;
    private static final VarHandle HANDED;
    static {
        try {
            HANDED = MethodHandles.lookup().findVarHandle(ArenaCloseTest.class, "handed", MemorySegment.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused")
    private MemorySegment handed;

    @Actor
    public void owner(III_Result r) {
        int code = 0;
        try (Arena arena = HEAP.newArena()) {
            MemorySegment a = arena.allocate(64);
            MemorySegment b = arena.allocate(4096, 4096);
            MemorySegment c = arena.allocate(LARGE);
            a.set(JAVA_LONG, 0, 1);
            b.set(JAVA_LONG, 4088, 2);
            c.set(JAVA_LONG, LARGE - 8, 3);
            HANDED.setRelease(this, a);
            if (a.get(JAVA_LONG, 0) != 1 || b.get(JAVA_LONG, 4088) != 2 || c.get(JAVA_LONG, LARGE - 8) != 3) {
                code = 9;
            }
        } catch (RuntimeException | Error e) {
            code = 9;
        }
        r.r1 = code;
    }

    @Actor
    public void other(III_Result r) {
        MemorySegment mine = HEAP.allocate(64);
        MemorySegment page = HEAP.allocate(4096, 4096);
        MemorySegment s = (MemorySegment) HANDED.getAcquire(this);
        int code;
        if (s == null) {
            code = 0;
        } else {
            try {
                s.get(JAVA_LONG, 0);
                code = 9;
            } catch (WrongThreadException e) {
                code = 1;
            } catch (IllegalStateException e) {
                code = 2;
            } catch (RuntimeException e) {
                code = 9;
            }
        }
        HEAP.free(page);
        HEAP.free(mine);
        r.r2 = code;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        HeapStats s = HEAP.stats();
        r.r3 = s.liveBytes() == 0 && s.largeCount() == 0 ? 0 : 1;
    }
}
