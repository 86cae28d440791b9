package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.spanheap.internal.compact.HandleTable;
import org.spanheap.internal.compact.RemoteFrees;

/**
 * A thread-owned page's thread-free list ({@link RemoteFrees}): another thread
 * frees an object of the page (a CAS push) while the owner collects (takes the
 * list whole) and then gives the page up (closes the list, taking what is
 * left). The freed entry lands exactly once: in the owner's collection, in
 * what the give-up takes, or, if the push found the list closed, nowhere (the
 * free then goes to the heap's limbo). The push's link must be visible to the
 * taker, or the chain would end early.
 * r1: 1 if the push landed on the list; r2: 1 if the collection took the
 * entry; r3: 1 if the give-up took it (-1 in r2 or r3: an unknown index in a chain).
 */
@JCStressTest
@Description("Thread-free list: a remote free racing the owner's collection and give-up lands exactly once.")
@Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "The owner's collection took the remote free.")
@Outcome(id = "1, 0, 1", expect = Expect.ACCEPTABLE, desc = "The push came after the collection; the give-up took it.")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE, desc = "The push came after the give-up: it found the list closed (limbo).")
@Outcome(expect = Expect.FORBIDDEN, desc = "The free lost, taken twice, refused while open, or a broken chain.")
@State
public class CompactRemoteFreeVsCollectTest {

    /** One table for every state: each takes an index and the arbiter gives it back. */
    static final HandleTable TABLE = new HandleTable();

    final RemoteFrees list = new RemoteFrees();
    final int a = TABLE.takeIndices(1);

    public CompactRemoteFreeVsCollectTest() {
        list.open(); // the page is owned
    }

    @Actor
    public void remoteFree(III_Result r) {
        r.r1 = list.push(TABLE, a) ? 1 : 0;
    }

    @Actor
    public void owner(III_Result r) {
        r.r2 = count(list.takeAll());
        r.r3 = count(list.close());
    }

    private int count(int head) {
        int n = 0;
        for (int i = head; i != HandleTable.NO_INDEX; i = TABLE.link(i)) {
            if (i != a || n > 0) {
                return -1;
            }
            n++;
        }
        return n;
    }

    @Arbiter
    public void arbiter() {
        TABLE.setLink(a, HandleTable.NO_INDEX);
        TABLE.giveIndices(a);
    }
}
