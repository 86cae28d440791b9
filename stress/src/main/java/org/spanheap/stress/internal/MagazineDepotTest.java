package org.spanheap.stress.internal;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.spanheap.internal.MagazineDepot;

/**
 * The magazine depot ({@link MagazineDepot}): two threads deposit the older halves of their
 * full magazines into one class's store and withdraw from it, at the same time, as threads of
 * one heap do when their magazines overflow and run dry. The blocks are fake addresses
 * (distinct numbers, never dereferenced): what is checked is the bookkeeping, that a block is
 * in exactly one place at all times.
 *
 * <p>Each actor has a full magazine {@code a} of {@value #CAPACITY} blocks of its own (actor 1:
 * 1..8, actor 2: 101..108) and an empty one {@code b}. It deposits the older half of {@code a},
 * withdraws a magazine's worth into {@code b} (perhaps the other actor's blocks), then deposits
 * the older half of what {@code b} got. The store has room for {@value #DEPOT} blocks, so a
 * deposit may be refused (the magazine then keeps everything).
 *
 * <p>r1, r2 (actors): 0 if both magazines are well formed afterwards (tops in range, no empty
 * slot below a top, the top a withdrawal returned is the one it stored), else 1. r3 (arbiter):
 * 0 if the blocks in the four magazines and the store are exactly the 16 the actors started
 * with; bit 1 if a block is in two places or a slot holds something no actor had; bit 2 if a
 * block is lost; bit 4 if the store's count disagrees with {@link MagazineDepot#blocks}.
 */
@JCStressTest
@Description("Magazine depot deposits and withdrawals racing on one class: every block in exactly one place.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Blocks moved between the magazines and the store; none lost or duplicated.")
@Outcome(expect = Expect.FORBIDDEN, desc = "A block lost or in two places, a malformed magazine, or a wrong count.")
@State
public class MagazineDepotTest {
    static final int CAPACITY = 8;
    static final int DEPOT = 12;
    /** Magazine layout as in a thread cache: top word, EMPTY sentinel, slots, FULL sentinel. */
    static final int TOP = 0;
    static final int BASE = 2;

    private final MagazineDepot depot = new MagazineDepot(new int[] {DEPOT});
    private final long[] a1 = magazine(1, CAPACITY);
    private final long[] b1 = magazine(0, 0);
    private final long[] a2 = magazine(101, CAPACITY);
    private final long[] b2 = magazine(0, 0);

    private static long[] magazine(long first, int count) {
        long[] m = new long[BASE + CAPACITY + 1];
        for (int i = 0; i < count; i++) {
            m[BASE + i] = first + i;
        }
        m[TOP] = BASE + count;
        m[BASE + CAPACITY] = -1;
        return m;
    }

    private int run(long[] a, long[] b) {
        depot.deposit(0, a, BASE, CAPACITY / 2, CAPACITY, TOP);
        int top = depot.withdraw(0, b, BASE, CAPACITY, TOP);
        if (top != b[TOP]) {
            return 1;
        }
        int got = top - BASE;
        if (got >= 2) {
            depot.deposit(0, b, BASE, got / 2, got, TOP);
        }
        return wellFormed(a) && wellFormed(b) ? 0 : 1;
    }

    private static boolean wellFormed(long[] m) {
        int count = (int) m[TOP] - BASE;
        if (count < 0 || count > CAPACITY || m[BASE + CAPACITY] != -1) {
            return false;
        }
        for (int i = 0; i < count; i++) {
            if (m[BASE + i] == 0) {
                return false;
            }
        }
        return true;
    }

    @Actor
    public void actor1(III_Result r) {
        r.r1 = run(a1, b1);
    }

    @Actor
    public void actor2(III_Result r) {
        r.r2 = run(a2, b2);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        java.util.BitSet seen = new java.util.BitSet();
        int dup = 0, total = 0;
        for (long[] m : new long[][] {a1, b1, a2, b2}) {
            for (int i = BASE; i < m[TOP]; i++) {
                dup |= mark(seen, m[i]);
                total++;
            }
        }
        long[][] store = new long[1][];
        int[] held = new int[1];
        depot.drain((c, s, count) -> {
            store[0] = s;
            held[0] = count;
        });
        if (store[0] != null) {
            for (int i = MagazineDepot.BASE; i < MagazineDepot.BASE + held[0]; i++) {
                dup |= mark(seen, store[0][i]);
                total++;
            }
        }
        int code = dup;
        if (total != 2 * CAPACITY || seen.cardinality() != 2 * CAPACITY) {
            code |= total < 2 * CAPACITY ? 2 : 1;
        }
        if (depot.blocks(0) != held[0]) {
            code |= 4;
        }
        r.r3 = code;
    }

    /** 1 if the block is not one the actors started with, or was seen already. */
    private static int mark(java.util.BitSet seen, long block) {
        boolean valid = (block >= 1 && block <= CAPACITY) || (block >= 101 && block < 101 + CAPACITY);
        if (!valid || seen.get((int) block)) {
            return 1;
        }
        seen.set((int) block);
        return 0;
    }
}
