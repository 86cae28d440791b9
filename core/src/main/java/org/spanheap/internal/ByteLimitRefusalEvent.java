package org.spanheap.internal;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * JFR event: a span heap refused an allocation because of its byte limit
 * (after returning the thread caches' blocks and retrying), just before it
 * throws {@code SpanHeapOutOfMemoryError}. With a stack trace: where the
 * memory was wanted. Costs nothing while JFR does not record it, and the
 * refusal path is cold anyway.
 */
@Name("org.spanheap.ByteLimitRefusal")
@Label("Byte Limit Refusal")
@Category({"spanheap", "Memory"})
@Description("An allocation refused because the heap's byte limit would be exceeded")
final class ByteLimitRefusalEvent extends Event {

    @Label("Heap")
    @Description("The heap's name: the MXBean name it was registered with, or a generated one")
    String heap;

    @Label("Requested")
    @DataAmount
    @Description("The size asked for; for a thread cache's refill, the block size of its class")
    long requestedBytes;

    @Label("Limit")
    @DataAmount
    long limitBytes;

    @Label("Charged")
    @DataAmount
    @Description("Bytes counted against the limit at the refusal (cached blocks included)")
    long chargedBytes;
}
