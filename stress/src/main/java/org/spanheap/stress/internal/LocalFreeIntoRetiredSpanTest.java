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
 * The owner's local frees into spans it retired racing remote frees into the same spans
 * (native {@code span.c}, "Frees into the LAB's retired spans": the LAB's retired ring keeps a
 * chain of the owner's frees per span and pushes it with one CAS through
 * {@code sh_span_free_chain} when it could change the span's state, or when {@code sh_stats}
 * flushes it; the FLOATING/REUSABLE/EMPTYING transitions that push makes).
 *
 * <p>The owner allocates {@value #N} blocks of a class with 15 blocks per span, so at least
 * one of its spans is retired (FLOATING, still its own) while it allocates. It stamps each
 * block; the even ones it hands to the other thread (release store) as it goes, the odd
 * ones it frees itself: into its hot span's local list or into its ring's chains of the
 * retired spans, without touching their anchors. The other thread frees every even block (remote: its own
 * chains). Both then call {@code sh_stats}, which pushes the caller's chains, so the two
 * pushes into one span race: either may bring it to the reuse threshold or empty it. The
 * owner then allocates {@value #M} blocks again: each must be one it freed itself or one
 * the other thread had marked "freeing" before it freed it (a block still held by the other
 * thread is a double hand-out); and frees them.
 *
 * <p>r1 (owner): 0 no block of the other thread came back, 1 at least one did (after its
 * free), 9 a double hand-out, a refused free, or an allocation failure. r2 (other): 0 all
 * stamps seen and frees accepted, 9 otherwise. r3 (arbiter, heap quiescent): 0 consistent,
 * 1 span states do not add up, 2 blocks of the class still counted live.
 */
@JCStressTest
@Description("Owner's local frees into its retired spans (the retired ring's chains) racing remote frees into them.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Every block distinct; none the other thread freed came back to the owner.")
@Outcome(id = "1, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "The owner got a block back after the other thread freed it.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block handed out while still held, a lost stamp, a refused free, or counters that do not add up.")
@State
public class LocalFreeIntoRetiredSpanTest {
    static final RawHeap HEAP = new RawHeap();
    static final int CLS = 35;                 // 16 KiB blocks, 15 per 256 KiB real span
    static final long SIZE = 16384;
    static final int N = 32;
    static final int M = 16;
    static final long FREEING = -1;
    /** Published instead of an address when an allocation failed, so the other thread does not wait. */
    static final long NONE = 1;
    private static final AtomicLong IDS = new AtomicLong();
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

    private final long stamp = IDS.incrementAndGet() << 8;
    /** Per even block i, slot i / 2: 0 not yet allocated, its address once handed over, FREEING once taken. */
    private final long[] slots = new long[N / 2];

    @Actor
    public void owner(III_Result r) {
        long[] mine = new long[N];
        int code = 0;
        for (int i = 0; i < N; i++) {
            long b = HEAP.alloc(SIZE);
            if (b == 0) {
                code = 9;
                for (int k = (i + 1) / 2; k < N / 2; k++) {
                    SLOT.setRelease(slots, k, NONE);
                }
                break;
            }
            mine[i] = b;
            HEAP.block(b, SIZE).set(JAVA_LONG, 16, stamp | i);
            if ((i & 1) == 0) {
                SLOT.setRelease(slots, i / 2, b); // release: the stamp is visible to the taker
            }
        }
        if (code == 9) {
            r.r1 = 9;
            return;
        }
        for (int i = 1; i < N; i += 2) {
            if (HEAP.block(mine[i], SIZE).get(JAVA_LONG, 16) != (stamp | i) || HEAP.free(mine[i]) != 0) {
                code = 9;
            }
        }
        HEAP.counters();                       // sh_stats: pushes this thread's chains
        long[] again = new long[M];
        int reused = 0;
        for (int j = 0; j < M; j++) {
            long b = HEAP.alloc(SIZE);
            again[j] = b;
            if (b == 0) {
                code = 9;
                continue;
            }
            for (int i = 0; i < N; i += 2) {
                if (mine[i] == b) {
                    if ((long) SLOT.getAcquire(slots, i / 2) != FREEING) {
                        code = 9;              // still held by the other thread
                    }
                    reused = 1;
                }
            }
        }
        for (long b : again) {
            if (b != 0 && HEAP.free(b) != 0) {
                code = 9;
            }
        }
        r.r1 = code == 9 ? 9 : reused;
    }

    @Actor
    public void other(III_Result r) {
        int code = 0;
        for (int k = 0; k < N / 2; k++) {
            long b;
            for (int spins = 1; (b = (long) SLOT.getAcquire(slots, k)) == 0; spins++) {
                Thread.onSpinWait();           // the owner publishes every block without waiting
                if ((spins & 255) == 0) {
                    Thread.yield();            // an oversubscribed machine: let the owner run
                }
            }
            if (b == NONE) {
                continue;
            }
            if (HEAP.block(b, SIZE).get(JAVA_LONG, 16) != (stamp | (2L * k))) {
                code = 9;
            }
            SLOT.setRelease(slots, k, FREEING); // before the free: the owner may get b back after it
            if (HEAP.free(b) != 0) {
                code = 9;
            }
        }
        HEAP.counters();                       // sh_stats: pushes this thread's chains
        r.r2 = code;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        RawHeap.Counters c = HEAP.settledCounters(x -> x.spansBalanced() && x.classLive()[CLS] == 0);
        r.r3 = (c.spansBalanced() ? 0 : 1) | (c.classLive()[CLS] == 0 ? 0 : 2);
    }
}
