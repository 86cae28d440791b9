package org.spanheap.netty;

import java.lang.foreign.MemorySegment;
import org.spanheap.SpanHeap;

/** What a span heap holds for a block: the expected figures of {@code usedDirectMemory}. */
final class HeldBytes {

    private HeldBytes() {}

    /** {@return the bytes {@code heap} holds for a block of {@code n} bytes: its size class} */
    static long of(SpanHeap heap, int n) {
        MemorySegment s = heap.allocate(n);
        try {
            return heap.usableSize(s);
        } finally {
            heap.free(s);
        }
    }
}
