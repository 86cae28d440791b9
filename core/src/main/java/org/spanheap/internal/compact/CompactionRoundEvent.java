package org.spanheap.internal.compact;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event: one compaction round of a compacting heap (reclaim of freed
 * blocks, moves, and the epoch change between them). Its duration is how long
 * accesses to the round's moving objects may wait. Costs nothing while JFR
 * does not record it.
 */
@Name("org.spanheap.CompactionRound")
@Label("Compaction Round")
@Category({"spanheap", "Compacting Heap"})
@Description("An epoch change with the reclaim and the moves it makes safe")
@StackTrace(false)
final class CompactionRoundEvent extends Event {

    @Label("Heap")
    @Description("Tag of the heap in its handles")
    long heap;

    @Label("Heap Name")
    @Description("The heap's name: the MXBean name it was registered with, or a generated one")
    String heapName;

    @Label("Moved")
    @DataAmount
    long movedBytes;

    @Label("Reclaimed")
    @DataAmount
    long reclaimedBytes;

    @Label("Epoch Close")
    @Description("Nanoseconds of the arena handshake inside the round")
    long epochCloseNanos;
}
