package org.spanheap.stress;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The hand-off every cross-thread protocol in spanheap relies on: a thread fills a block of
 * native memory with plain writes and then publishes it with a release store into a native
 * flag word; a thread that sees the flag with an acquire load must see the block's contents.
 * Both words live in one segment of a shared arena, accessed through the FFM API's var handles,
 * as the span headers and remote free lists are.
 */
@JCStressTest
@Description("Release/acquire publication of plain writes through a native MemorySegment.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "Flag not yet seen; payload not read.")
@Outcome(id = "1, 42", expect = Expect.ACCEPTABLE, desc = "Flag seen, payload visible.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Flag seen but payload stale, or any other value.")
@State
public class SegmentPublicationTest {

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final long PAYLOAD = 0;
    private static final long FLAG = 64; // another cache line

    private final MemorySegment block = Arena.ofAuto().allocate(128, 64);

    @Actor
    public void writer() {
        block.set(ValueLayout.JAVA_INT, PAYLOAD, 42);       // plain: the block's contents
        INT.setRelease(block, FLAG, 1);                      // release: publishes them
    }

    @Actor
    public void reader(II_Result r) {
        int flag = (int) INT.getAcquire(block, FLAG);        // acquire: pairs with the release
        r.r1 = flag;
        r.r2 = flag == 1 ? block.get(ValueLayout.JAVA_INT, PAYLOAD) : 0;
    }
}
