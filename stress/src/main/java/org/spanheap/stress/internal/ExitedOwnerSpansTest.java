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
 * Adoption of an exited thread's spans racing remote frees into them (native
 * {@code frontend.c}'s thread exit: the LAB's chains pushed, its reusable spans and hot
 * spans with a free block moved to the orphanage, full ones left FLOATING as orphans;
 * {@code span.c}: a free that brings an orphan to the reuse threshold adopts it into the
 * freeing thread's set, an emptying free returns it to the pool).
 *
 * <p>The first actor starts a short-lived thread that allocates {@value #N} blocks of a class
 * with 15 blocks per span (at least one span retired on the way), stamps them, hands the even
 * ones to the other actor (release store) as it goes, frees the odd ones itself (local:
 * the hot span's list or its chains of retired spans) and exits, while the other actor frees
 * the even ones (remote) and pushes its chains ({@code sh_stats}). So the exiting thread's
 * pushes, detaches and moves to the orphanage race the remote pushes into the same spans,
 * which may find an orphan and adopt it, or empty it. After joining the thread, the first
 * actor allocates {@value #M} blocks: each must be one the exited thread freed, one the other
 * actor had marked "freeing" before it freed it, or a new one, never one the other actor
 * still holds; and frees them.
 *
 * <p>r1 (first actor): 0 no block of the other actor came back, 1 at least one did (after its
 * free), 9 a double hand-out, a refused free, a lost stamp or an allocation failure (also in
 * the exited thread). r2 (other): 0 all stamps seen and frees accepted, 9 otherwise. r3
 * (arbiter, heap quiescent): 0 consistent, 1 span states do not add up, 2 blocks of the class
 * still counted live.
 */
@JCStressTest
@Description("An exited thread's spans (orphanage, adoption) racing remote frees into them.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Every block distinct; none the other actor freed came back to the first.")
@Outcome(id = "1, 0, 0", expect = Expect.ACCEPTABLE_INTERESTING,
        desc = "The first actor got a block back after the other actor freed it.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block handed out while still held, a lost stamp, a refused free, or counters that do not add up.")
@State
public class ExitedOwnerSpansTest {
    static final RawHeap HEAP = new RawHeap();
    static final int CLS = 35;                 // 16 KiB blocks, 15 per 256 KiB real span
    static final long SIZE = 16384;
    static final int N = 32;
    static final int M = 16;
    static final long FREEING = -1;
    /** Published instead of an address when an allocation failed, so the other actor does not wait. */
    static final long NONE = 1;
    private static final AtomicLong IDS = new AtomicLong();
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);

    private final long stamp = IDS.incrementAndGet() << 8;
    /** Per even block i, slot i / 2: 0 not yet allocated, its address once handed over, FREEING once taken. */
    private final long[] slots = new long[N / 2];
    /** The exited thread's blocks; read by the first actor after join (happens-before). */
    private final long[] theirs = new long[N];
    private boolean failed;

    /** The short-lived owner: allocates, hands out the even blocks, frees the odd ones, exits. */
    private void shortLived() {
        for (int i = 0; i < N; i++) {
            long b = HEAP.alloc(SIZE);
            if (b == 0) {
                failed = true;
                for (int k = (i + 1) / 2; k < N / 2; k++) {
                    SLOT.setRelease(slots, k, NONE);
                }
                return;
            }
            theirs[i] = b;
            HEAP.block(b, SIZE).set(JAVA_LONG, 16, stamp | i);
            if ((i & 1) == 0) {
                SLOT.setRelease(slots, i / 2, b); // release: the stamp is visible to the taker
            }
        }
        for (int i = 1; i < N; i += 2) {
            if (HEAP.block(theirs[i], SIZE).get(JAVA_LONG, 16) != (stamp | i) || HEAP.free(theirs[i]) != 0) {
                failed = true;
            }
        }
    }

    @Actor
    public void owner(III_Result r) {
        Thread t = new Thread(this::shortLived);
        t.start();
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            r.r1 = 9;
            return;
        }
        if (failed) {
            r.r1 = 9;
            return;
        }
        int code = 0;
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
                if (theirs[i] == b) {
                    if ((long) SLOT.getAcquire(slots, i / 2) != FREEING) {
                        code = 9;              // still held by the other actor
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
                Thread.onSpinWait();           // the short-lived thread publishes every block without waiting
                if ((spins & 255) == 0) {
                    Thread.yield();            // an oversubscribed machine: let it run
                }
            }
            if (b == NONE) {
                continue;
            }
            if (HEAP.block(b, SIZE).get(JAVA_LONG, 16) != (stamp | (2L * k))) {
                code = 9;
            }
            SLOT.setRelease(slots, k, FREEING); // before the free: the first actor may get b back after it
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
