package org.spanheap.stress.heap;

import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

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
 * A block allocated by one platform thread and freed by another through the Java fast path
 * ({@code SpanHeapImpl.allocateAddress/freeAddress}: the magazines, the free mark, refill and
 * drain in batches), racing the owner's next allocations of the same class.
 *
 * <p>The owner allocates x, stamps it and hands it over (release); then it allocates y and
 * z of the same class, stamps them, checks them and frees them itself. The other thread takes
 * x (acquire; it waits for it), checks the stamp, marks it "freeing" and frees it (into its
 * magazine, which drains to the native heap in batches, so blocks reach the owner's spans as
 * remote frees and come back through the owner's refills). Then it frees x a second time:
 * its first free left x free-marked in its own magazine, so this double free must be refused
 * with {@link IllegalStateException}. y or z may be x only after the other thread marked it
 * (drained and refilled in the meantime). The arbiter (no actor running) checks that the
 * heap counts no live bytes: every block went back to a magazine or the native heap.
 *
 * <p>r1 (owner): 0 y and z distinct from x and each other, stamps intact; 1 y or z is x,
 * handed out again after its free; 9 a block held twice or a stamp overwritten. r2 (other):
 * 0 stamp seen and the double free refused; 9 otherwise. r3 (arbiter): 0 no live bytes,
 * 1 live bytes left.
 */
@JCStressTest
@Description("Cross-thread free through the Java thread caches racing the owner's allocation; sequential double free refused.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = "x freed by the other thread, its double free refused; y, z distinct.")
@Outcome(id = "1, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "x freed by the other thread, drained, and handed to the owner again after its free.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A block held twice, a stamp lost, an undetected double free, or live bytes left.")
@State
public class CrossThreadFreeTest {
    static final SpanHeap HEAP = SpanHeap.create();
    static final long SIZE = 64;
    private static final AtomicLong IDS = new AtomicLong();
    private static final VarHandle HANDED;
    private static final VarHandle FREEING;
    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HANDED = l.findVarHandle(CrossThreadFreeTest.class, "handed", MemorySegment.class);
            FREEING = l.findVarHandle(CrossThreadFreeTest.class, "freeing", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long stamp = IDS.incrementAndGet() << 8;
    @SuppressWarnings("unused")
    private MemorySegment handed;
    @SuppressWarnings("unused")
    private boolean freeing;

    @Actor
    public void owner(III_Result r) {
        MemorySegment x = HEAP.allocateUninitialized(SIZE);
        x.set(JAVA_LONG, 16, stamp);
        HANDED.setRelease(this, x);             // release: the stamp is visible to the taker
        MemorySegment y = HEAP.allocateUninitialized(SIZE);
        MemorySegment z = HEAP.allocateUninitialized(SIZE);
        y.set(JAVA_LONG, 16, stamp | 1);
        z.set(JAVA_LONG, 16, stamp | 2);
        int code = 0;
        if (y.address() == x.address() || z.address() == x.address()) {
            code = (boolean) FREEING.getAcquire(this) ? 1 : 9;
        }
        if (y.address() == z.address() || y.get(JAVA_LONG, 16) != (stamp | 1) || z.get(JAVA_LONG, 16) != (stamp | 2)) {
            code = 9;
        }
        HEAP.free(y);
        HEAP.free(z);
        r.r1 = code;
    }

    @Actor
    public void other(III_Result r) {
        MemorySegment x;
        for (int spins = 1; (x = (MemorySegment) HANDED.getAcquire(this)) == null; spins++) {
            Thread.onSpinWait();                // the owner hands x over without waiting
            if ((spins & 255) == 0) {
                Thread.yield();                 // an oversubscribed machine: let the owner run
            }
        }
        boolean seen = x.get(JAVA_LONG, 16) == stamp;
        FREEING.setRelease(this, true);         // before the free: the owner may get x back after it
        HEAP.free(x);
        boolean refused;
        try {
            HEAP.free(x);
            refused = false;
        } catch (IllegalStateException e) {
            refused = true;
        }
        r.r2 = seen && refused ? 0 : 9;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        r.r3 = HEAP.stats().liveBytes() == 0 ? 0 : 1;
    }
}
