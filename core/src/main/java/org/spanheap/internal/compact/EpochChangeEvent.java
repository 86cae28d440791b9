package org.spanheap.internal.compact;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * JFR event: a compacting heap closed an epoch (its shared arena). The
 * duration is the close's handshake with every thread, which is what an
 * access of a moving object, and the round around it, waits for. Costs
 * nothing while JFR does not record it. Every round closes an epoch, and
 * {@code CompactionRound} carries the close's time already, so by default
 * only closes of at least 1 ms are recorded (the slow handshakes).
 */
@Name("org.spanheap.EpochChange")
@Label("Epoch Change")
@Category({"spanheap", "Compacting Heap"})
@Description("A compacting heap closed an epoch; the duration is the arena handshake")
@StackTrace(false)
@Threshold("1 ms")
final class EpochChangeEvent extends Event {

    /** {@link #reason}: a round that reclaims freed objects and moves none. */
    static final String RECLAIM = "reclaim";
    /** {@link #reason}: a round that moves objects (and reclaims freed ones). */
    static final String COMPACTION = "compaction";
    /** {@link #reason}: a round of its own for one object ({@code relocate}). */
    static final String RELOCATE = "relocate";
    /** {@link #reason}: the heap is closing. */
    static final String CLOSE = "close";

    @Label("Heap")
    @Description("The heap's name: the MXBean name it was registered with, or a generated one")
    String heap;

    @Label("Epoch")
    @Description("Number of the epoch closed (0 is the heap's first)")
    long epoch;

    @Label("Reason")
    @Description("reclaim, compaction, relocate or close")
    String reason;
}
