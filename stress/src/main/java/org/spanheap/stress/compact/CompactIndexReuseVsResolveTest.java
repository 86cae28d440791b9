package org.spanheap.stress.compact;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;
import org.spanheap.internal.compact.HandleTable;

/**
 * A handle index reused while a stale handle is resolved, at the handle
 * table's level (no epoch in between, the worst case the epochs otherwise
 * rule out): one thread kills the entry and publishes a new object at the same
 * index (its generation bumped); another resolves the old handle as a
 * resolve does (state, address, state again). It must get the old address or
 * a refusal, never the new object's address: without the second load of the
 * state, a resolve that loaded the old state before the kill and the address
 * after the reuse returned the new object's address.
 * r1: 1 the old address, 0 refused, 2 the new object's address.
 */
@JCStressTest
@Description("Handle table: a stale handle resolved while its index is reused never yields the new object.")
@Outcome(id = "1", expect = Expect.ACCEPTABLE, desc = "Resolved before the kill: the old object.")
@Outcome(id = "0", expect = Expect.ACCEPTABLE, desc = "Stale handle refused.")
@Outcome(id = "2", expect = Expect.FORBIDDEN, desc = "The stale handle reached the new object.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Anything else (a torn or foreign address).")
@State
public class CompactIndexReuseVsResolveTest {

    static final HandleTable TABLE = new HandleTable();
    static final long OLD = 0x1000, NEW = 0x2000;

    final int index = TABLE.takeIndices(1);
    final long old;

    public CompactIndexReuseVsResolveTest() {
        TABLE.publishLive(index, OLD, 8);
        old = TABLE.handleOf(index);
    }

    @Actor
    public void reuser() {
        TABLE.kill(old);
        TABLE.publishLive(index, NEW, 16);
    }

    @Actor
    public void staleResolver(I_Result r) {
        long address = TABLE.resolveAddress(old);
        r.r1 = address == OLD ? 1 : address == -1 ? 0 : address == NEW ? 2 : 3;
    }

    @Arbiter
    public void arbiter() {
        TABLE.kill(TABLE.handleOf(index));
        TABLE.setLink(index, HandleTable.NO_INDEX);
        TABLE.giveIndices(index);
    }
}
