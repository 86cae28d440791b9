package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.spanheap.internal.compact.HandleTable;
import org.spanheap.internal.compact.LaneLimbo;

/**
 * A lane's stack of the compacting heap's lane limbo ({@link LaneLimbo}): two frees push on the
 * same stack (one word, so their CASes race); the second thread then takes it, as a round does,
 * while the first may still be pushing. Whatever the interleaving, that take and a later one
 * (the arbiter's, when nobody runs) find both entries exactly once, and each word's count is the
 * length of its chain: the round hands a chain to the lane's ready entries with that count,
 * unread, so a count that disagreed with its chain would corrupt the lane's accounting. Two
 * actors: jcstress runs no more actors than the machine has CPUs.
 * r1: 2 if both takes together found both entries once, with counts matching their chains, and
 * left the stack empty (-1 otherwise); r2: entries the concurrent take found.
 */
@JCStressTest
@Description("Lane limbo: concurrent pushes on one stack and a take; no entry lost or found twice, counts exact.")
@Outcome(id = "2, 1", expect = Expect.ACCEPTABLE, desc = "The take came before the other thread's push.")
@Outcome(id = "2, 2", expect = Expect.ACCEPTABLE, desc = "The take came after both pushes.")
@Outcome(expect = Expect.FORBIDDEN, desc = "An entry lost, found twice, a broken chain or a wrong count.")
@State
public class LaneLimboPushDrainTest {

    /** One table for every state: each takes two indices and the arbiter gives them back. */
    static final HandleTable TABLE = new HandleTable();
    private static final int LANE = 1;
    private static final int STRIPE = 2;

    final LaneLimbo limbo = new LaneLimbo(TABLE, 3);
    final int a = TABLE.takeIndices(1);
    final int b = TABLE.takeIndices(1);
    long early;

    @Actor
    public void freer1() {
        limbo.push(LANE, STRIPE, a);
    }

    @Actor
    public void freerThenRound() {
        limbo.push(LANE, STRIPE, b);
        early = limbo.drain(LANE, STRIPE);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        long late = limbo.drain(LANE, STRIPE);
        int seenA = 0, seenB = 0, other = 0, fromEarly = 0;
        boolean counts = true;
        for (long word : new long[] {early, late}) {
            int n = 0;
            for (int i = LaneLimbo.head(word); i != HandleTable.NO_INDEX && n < 4; i = TABLE.link(i), n++) {
                if (i == a) {
                    seenA++;
                } else if (i == b) {
                    seenB++;
                } else {
                    other++;
                }
            }
            counts &= n == LaneLimbo.count(word);
            if (word == early) {
                fromEarly = n;
            }
        }
        boolean emptyAfter = limbo.drain(LANE, STRIPE) == 0;
        r.r1 = seenA == 1 && seenB == 1 && other == 0 && counts && emptyAfter ? 2 : -1;
        r.r2 = fromEarly;
        TABLE.setLink(a, b); // both back to the table's free list, as one list
        TABLE.setLink(b, HandleTable.NO_INDEX);
        TABLE.giveIndices(a);
    }
}
