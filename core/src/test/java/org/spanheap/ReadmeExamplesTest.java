package org.spanheap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The README's examples of {@link SpanHeap}, an arena and {@link CompactingHeap}, as they are
 * written there, so that they keep compiling and doing what the README says of them.
 */
class ReadmeExamplesTest {

    @Test
    void theSpanHeapExampleWorks() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment block = heap.allocate(64);          // zeroed, like Arena.allocate
            block.set(ValueLayout.JAVA_LONG, 0, 42);
            heap.free(block);

            // what the README says of it: blocks are zeroed, a double free throws
            MemorySegment zeroed = heap.allocate(64);
            assertEquals(0L, zeroed.get(ValueLayout.JAVA_LONG, 0));
            heap.free(zeroed);
            assertThrows(IllegalStateException.class, () -> heap.free(zeroed));
        }
    }

    @Test
    void theArenaExampleWorks() {
        MemorySegment kept;
        try (SpanHeap heap = SpanHeap.create(); Arena arena = heap.newArena()) {
            MemorySegment name = arena.allocateFrom("spanheap");    // any SegmentAllocator use
            MemorySegment ints = arena.allocate(ValueLayout.JAVA_INT, 1024);

            assertEquals("spanheap", name.getString(0));
            assertEquals(4096, ints.byteSize());
            kept = ints;
        }
        // the arena freed everything at close: its segments are no longer accessible
        assertThrows(IllegalStateException.class, () -> kept.get(ValueLayout.JAVA_INT, 0));
    }

    @Test
    void theCompactingHeapExampleWorks() {
        try (CompactingHeap values = CompactingHeap.create()) {
            long handle = values.allocateFrom(MemorySegment.ofArray("a value".getBytes()));
            String copy = values.read(handle, s -> new String(s.toArray(ValueLayout.JAVA_BYTE)));
            values.free(handle);

            assertEquals("a value", copy);
            assertThrows(StaleHandleException.class, () -> values.read(handle, s -> s.byteSize()));
        }
    }
}
