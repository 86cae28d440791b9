package org.spanheap.stress.internal;

import java.util.HashSet;
import java.util.Set;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.spanheap.internal.NativeHeap;

/**
 * The owner's frees into its retired spans racing a sweep of its chains (native
 * {@code span.c}, "The chains lock": the owner enters its ring's chains with two plain stores
 * and a load, a sweeper takes the lock word, makes every thread pass a full barrier
 * (membarrier) and waits for the owner to leave).
 *
 * <p>The owner allocates {@value #N} blocks of a class with 15 blocks per span, so that it
 * retires spans while it allocates, and frees them all: the frees into retired spans link into
 * its ring's chains. Meanwhile the other thread calls {@code sh_trim}, which sweeps every
 * other LAB's chains (pushes them to their spans) with the waiting lock. Then the owner
 * flushes its own chains ({@code sh_stats}) and allocates {@value #M} blocks: a chain pushed
 * twice (by the owner and by the sweep) would put a block twice on its span's list and hand
 * it out twice; then frees them.
 *
 * <p>r1 (owner): 0 all frees accepted and the blocks allocated again distinct, 9 otherwise
 * (a block handed out twice, a refused free, an allocation failure). r2 (sweeper): the
 * sweep's return is not checked, always 0. r3 (arbiter, heap quiescent): 0 consistent, 1 span
 * states do not add up, 2 blocks of the class still counted live, 4 the heap committed more
 * than {@value #COMMITTED_CAP} bytes (chains lost by a sweep pin their spans for good, and
 * over the run's millions of states the heap would grow).
 */
@JCStressTest
@Description("The owner's frees into its retired spans (chains entered without an atomic) racing a sweep of its chains.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = "Every block freed once and handed out once; counters consistent.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block handed out twice, a refused free, counters that do not add up, or spans lost.")
@State
public class RetiredChainVsSweepTest {
    static final RawHeap HEAP = new RawHeap();
    static final int CLS = 35;                 // 16 KiB blocks, 15 per 256 KiB real span
    static final long SIZE = 16384;
    static final int N = 48;
    static final int M = 48;
    static final long COMMITTED_CAP = 1L << 30;

    @Actor
    public void owner(III_Result r) {
        long[] mine = new long[N];
        int code = 0;
        for (int i = 0; i < N; i++) {
            mine[i] = HEAP.alloc(SIZE);
            if (mine[i] == 0) {
                code = 9;
            }
        }
        for (long b : mine) {
            if (b != 0 && HEAP.free(b) != 0) {
                code = 9;
            }
        }
        HEAP.counters();                       // sh_stats: pushes this thread's chains
        Set<Long> seen = new HashSet<>();
        long[] again = new long[M];
        for (int j = 0; j < M; j++) {
            again[j] = HEAP.alloc(SIZE);
            if (again[j] == 0 || !seen.add(again[j])) {
                code = 9;
            }
        }
        for (long b : again) {
            if (b != 0 && HEAP.free(b) != 0) {
                code = 9;
            }
        }
        r.r1 = code;
    }

    @Actor
    public void sweeper(III_Result r) {
        NativeHeap.trim(HEAP.handle);          // sweeps the owner's chains, waiting for its lock
        r.r2 = 0;
    }

    @Arbiter
    public void arbiter(III_Result r) {
        RawHeap.Counters c = HEAP.settledCounters(x -> x.spansBalanced() && x.classLive()[CLS] == 0);
        r.r3 = (c.spansBalanced() ? 0 : 1) | (c.classLive()[CLS] == 0 ? 0 : 2)
                | (c.committed() <= COMMITTED_CAP ? 0 : 4);
    }
}
