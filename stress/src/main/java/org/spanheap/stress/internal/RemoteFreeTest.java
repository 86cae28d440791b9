package org.spanheap.stress.internal;

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
 * Remote free racing the owner's allocation in the same span (native {@code span.c}: the
 * anchor word's shared free list and state, {@code sh_span_collect}, {@code sh_span_retire},
 * the FLOATING/REUSABLE/EMPTYING transitions of {@code sh_span_free_chain}).
 *
 * <p>The owner allocates {@value #N} blocks of a class with 15 blocks per span, one after
 * the other, stamping each and handing it to the other thread (release store) at once. The
 * other thread takes each block as soon as it appears (acquire), checks the stamp, marks the
 * slot "freeing" and frees the block. It never allocates this class, so every free is
 * remote: a CAS push onto the span's shared list, or a state change if the owner retired the
 * span. The owner never frees a block itself, so its local list stays empty and each of its
 * allocations bumps, collects the shared list (CAS, racing the pushes), or retires the span
 * and takes a reusable, pooled or new one.
 *
 * <p>An allocation may return a block of this state that the other thread already freed:
 * legal only if the other thread had marked that slot before freeing it; a block handed out
 * while the other thread still held it is a double hand-out. The arbiter (heap quiescent)
 * checks that no block of the class is counted live and that span states add up.
 *
 * <p>r1 (owner): how many of its allocations returned a block of this state that the other
 * thread had already freed (0..{@value #N} - 1); 9 a block handed out twice or an allocation
 * failed. r2 (other): 0 all stamps seen and frees accepted; 9 otherwise. r3 (arbiter): 0
 * consistent; 1 span states do not add up, 2 blocks of the class still counted live.
 */
@JCStressTest
@Description("Remote free (anchor CAS) racing the owner's allocation, collection and retirement of the span.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Every block distinct; remote frees not (yet) collected by the owner.")
@Outcome(id = "1, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "The owner collected a remote free and got that block again, after its free.")
@Outcome(id = "2, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "Two blocks freed remotely came back to the owner within the state.")
@Outcome(id = "3, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "Three blocks freed remotely came back to the owner within the state.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block handed out while still held, a lost stamp, a refused free, or counters that do not add up.")
@State
public class RemoteFreeTest {
    static final RawHeap HEAP = new RawHeap();
    static final int CLS = 35;                 // 16 KiB blocks, 15 per 256 KiB real span
    static final long SIZE = 16384;
    static final int N = 4;
    static final long FREEING = -1;
    /** Published instead of an address when an allocation failed, so the other thread does not wait. */
    static final long NONE = 1;
    private static final AtomicLong IDS = new AtomicLong();
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

    private final long stamp = IDS.incrementAndGet() << 8;
    /** Per block: 0 not yet allocated, its address once handed over, FREEING once taken. */
    private final long[] slots = new long[N];

    @Actor
    public void owner(III_Result r) {
        long[] mine = new long[N];
        int reused = 0;
        for (int i = 0; i < N; i++) {
            long b = HEAP.alloc(SIZE);
            if (b == 0) {
                r.r1 = 9;
                for (int k = i; k < N; k++) {
                    SLOT.setRelease(slots, k, NONE);
                }
                return;
            }
            for (int j = 0; j < i; j++) {
                if (mine[j] == b) {
                    if ((long) SLOT.getAcquire(slots, j) != FREEING) {
                        r.r1 = 9;            // still held by the other thread
                    }
                    reused++;
                }
            }
            mine[i] = b;
            HEAP.block(b, SIZE).set(JAVA_LONG, 16, stamp | i);
            SLOT.setRelease(slots, i, b);   // release: the stamp is visible to the taker
        }
        if (r.r1 != 9) {
            r.r1 = reused;
        }
    }

    @Actor
    public void other(III_Result r) {
        int code = 0;
        for (int i = 0; i < N; i++) {
            long b;
            for (int spins = 1; (b = (long) SLOT.getAcquire(slots, i)) == 0; spins++) {
                Thread.onSpinWait();         // the owner publishes every block without waiting
                if ((spins & 255) == 0) {
                    Thread.yield();          // an oversubscribed machine: let the owner run
                }
            }
            if (b == NONE) {
                continue;
            }
            if (HEAP.block(b, SIZE).get(JAVA_LONG, 16) != (stamp | i)) {
                code = 9;
            }
            SLOT.setRelease(slots, i, FREEING); // before the free: the owner may get b back after it
            if (HEAP.free(b) != 0) {
                code = 9;
            }
        }
        r.r2 = code;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        RawHeap.Counters c = HEAP.settledCounters(x -> x.spansBalanced() && x.classLive()[CLS] == 0);
        r.r3 = (c.spansBalanced() ? 0 : 1) | (c.classLive()[CLS] == 0 ? 0 : 2);
    }
}
