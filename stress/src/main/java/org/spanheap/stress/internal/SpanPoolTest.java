package org.spanheap.stress.internal;

import java.lang.foreign.MemorySegment;
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
 * The span pool (native {@code span_pool.c}: per real-span size, per core Treiber stacks with
 * an ABA tag in the head word), driven through the batch API so that spans enter and leave
 * the pool concurrently on both actors' stripes:
 * <ul>
 * <li>class {@value #BIG} has one 1 MiB block per span: every batch of two retires the hot
 *     span and pops a span from the pool; freeing the batch empties the retired span, which is
 *     pushed back at once (eager return, madvised because it is large);</li>
 * <li>class {@value #SMALL} (64-byte blocks, 252 per 16 KiB real span): a batch of two
 *     spans' worth of blocks fills whole spans, and freeing it returns the filled spans to the
 *     pool. A pop falls back to the stacks of other real-span sizes, so both kinds of span
 *     cross between the stacks.</li>
 * </ul>
 * Each actor stamps every block it holds with a value unique to (state, actor, block) and
 * checks all stamps before freeing: a span or block handed to both actors at once (a pop that
 * installed a stale link after an ABA) overwrites a stamp. The arbiter runs when no actor
 * runs, so the heap is quiescent and its counters exact: every carved span is hot, floating,
 * reusable or pooled, no block of the two classes is live, and the arena did not keep
 * carving new spans (a span lost from the pool is never reused, so carving would grow).
 *
 * <p>Result codes (bit sets, 0 = all good). Actors: 1 batch refused or short, 2 a stamp was
 * overwritten (block held twice), 4 {@code sh_free_batch} rejected a block. Arbiter: 1 span
 * states do not add up to the carved spans, 2 blocks of the test's classes still counted live,
 * 4 more than {@value #MAX_CARVED} spans carved.
 */
@JCStressTest
@Description("Span pool push/pop under concurrent whole-span batches: no span lost or handed out twice (ABA).")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Both actors got distinct blocks with intact stamps; counters consistent, no span lost.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block or span handed out twice (stamp overwritten), a refused batch or free, "
                + "or counters that do not add up (span lost or counted twice).")
@State
public class SpanPoolTest {
    static final RawHeap HEAP = new RawHeap();
    static final int BIG = 59;                 // 1 MiB blocks, 1 per span, 2 MiB real span
    static final int SMALL = 3;                // 64 B blocks, 252 per 16 KiB real span
    static final int BIG_N = 2;
    static final int SMALL_N = 2 * 252;
    static final long BIG_SIZE = 1 << 20;
    static final int MAX_CARVED = 64;
    private static final AtomicLong IDS = new AtomicLong();
    private static final ThreadLocal<long[]> SCRATCH = ThreadLocal.withInitial(() -> new long[BIG_N + SMALL_N]);

    private final long id = IDS.incrementAndGet();

    @Actor
    public void actor1(III_Result r) {
        r.r1 = churn(1);
    }

    @Actor
    public void actor2(III_Result r) {
        r.r2 = churn(2);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        RawHeap.Counters c = HEAP.settledCounters(x -> arbiterCode(x) == 0);
        r.r3 = arbiterCode(c);
    }

    private static int arbiterCode(RawHeap.Counters c) {
        int code = 0;
        if (!c.spansBalanced()) {
            code |= 1;
        }
        if (c.classLive()[BIG] != 0 || c.classLive()[SMALL] != 0) {
            code |= 2;
        }
        if (c.carved() > MAX_CARVED) {
            code |= 4;
        }
        return code;
    }

    private int churn(int actor) {
        long[] b = SCRATCH.get();
        int code = 0;
        int n = 0;
        int got = HEAP.allocBatch(BIG, b, 0, BIG_N);
        if (got > 0) {
            n = got;
        }
        int got2 = HEAP.allocBatch(SMALL, b, n, SMALL_N);
        if (got2 > 0) {
            n += got2;
        }
        if (got != BIG_N || got2 != SMALL_N) {
            code |= 1;
        }
        long stamp = (id << 12) | ((long) actor << 11);
        for (int i = 0; i < n; i++) {
            long size = i < got ? BIG_SIZE : 64;
            MemorySegment s = HEAP.block(b[i], size);
            s.set(JAVA_LONG, 16, stamp | i);          // words 0 and 1: link and free mark
            s.set(JAVA_LONG, size - 8, stamp | i);
        }
        for (int i = 0; i < n; i++) {
            long size = i < got ? BIG_SIZE : 64;
            MemorySegment s = HEAP.block(b[i], size);
            if (s.get(JAVA_LONG, 16) != (stamp | i) || s.get(JAVA_LONG, size - 8) != (stamp | i)) {
                code |= 2;
            }
        }
        if (HEAP.freeBatch(b, n) != 0) {
            code |= 4;
        }
        return code;
    }
}
