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
import org.spanheap.internal.compact.Limbo;

/**
 * The compacting heap's limbo ({@link Limbo}): two frees push on one stripe (the
 * same word, so their CASes race); the second thread then drains every stripe,
 * as a round does, while the first may still be pushing. Whatever the
 * interleaving, that drain and a later one (the arbiter's, when nobody runs)
 * find both entries exactly once, each chain's links intact (a push whose link
 * was not visible to the drain would cut the chain and lose the other entry).
 * Two actors: jcstress runs no more actors than the machine has CPUs.
 * r1: entries found by both drains (-1 if one was found twice or an unknown
 * index appeared); r2: entries found by the concurrent drain.
 */
@JCStressTest
@Description("Limbo: concurrent pushes on one stripe and a drain; no entry lost or found twice.")
@Outcome(id = "2, 1", expect = Expect.ACCEPTABLE, desc = "The drain came before the other thread's push.")
@Outcome(id = "2, 2", expect = Expect.ACCEPTABLE, desc = "The drain came after both pushes.")
@Outcome(expect = Expect.FORBIDDEN, desc = "An entry lost, found twice, or a broken chain.")
@State
public class LimboPushDrainTest {

    /** One table for every state: each takes two indices and the arbiter gives them back. */
    static final HandleTable TABLE = new HandleTable();

    final Limbo limbo = new Limbo(TABLE);
    final int a = TABLE.takeIndices(1);
    final int b = TABLE.takeIndices(1);
    final int[] early = new int[Limbo.STRIPES];

    @Actor
    public void freer1() {
        limbo.push(1, a, 16);
    }

    @Actor
    public void freerThenRound() {
        limbo.push(1, b, 48);
        limbo.drain(early);
    }

    @Arbiter
    public void arbiter(II_Result r) {
        int[] late = new int[Limbo.STRIPES];
        limbo.drain(late);
        int seenA = 0, seenB = 0, other = 0, fromEarly = 0;
        for (int[] heads : new int[][] {early, late}) {
            for (int h : heads) {
                for (int i = h, n = 0; i != HandleTable.NO_INDEX && n < 4; i = TABLE.link(i), n++) {
                    if (i == a) {
                        seenA++;
                    } else if (i == b) {
                        seenB++;
                    } else {
                        other++;
                    }
                    if (heads == early) {
                        fromEarly++;
                    }
                }
            }
        }
        r.r1 = seenA == 1 && seenB == 1 && other == 0 && limbo.isEmpty() ? 2 : -1;
        r.r2 = fromEarly;
        TABLE.setLink(a, b); // both back to the table's free list, as one list
        TABLE.setLink(b, HandleTable.NO_INDEX);
        TABLE.giveIndices(a);
    }
}
