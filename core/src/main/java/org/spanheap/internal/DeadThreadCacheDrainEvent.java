package org.spanheap.internal;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event: a span heap returned the thread cache of a terminated thread to
 * the heap. That happens lazily, when another thread creates its cache, on
 * {@code stats()}, {@code flushThreadCache()}, {@code trim()} or when an
 * allocation hits the byte limit; the event's thread is the one that drained.
 * Costs nothing while JFR does not record it.
 */
@Name("org.spanheap.DeadThreadCacheDrain")
@Label("Dead Thread Cache Drain")
@Category({"spanheap", "Memory"})
@Description("Free blocks cached by a terminated thread returned to the heap")
@StackTrace(false)
final class DeadThreadCacheDrainEvent extends Event {

    @Label("Heap")
    @Description("The heap's name: the MXBean name it was registered with, or a generated one")
    String heap;

    @Label("Dead Thread Id")
    @Description("Thread.threadId() of the terminated owner of the cache")
    long threadId;

    @Label("Virtual")
    @Description("Whether the owner was a (promoted) virtual thread")
    boolean virtual;

    @Label("Blocks")
    long blocks;

    @Label("Drained")
    @DataAmount
    long bytes;
}
