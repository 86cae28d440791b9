package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

/**
 * {@link CompactingHeap#readOnlySegment} and the reads built on it ({@code read}, {@code getLong}):
 * the object's bytes through a segment that refuses writes, the same errors as {@link
 * CompactingHeap#segment} for stale, other-heap and closed-heap handles, and the bytes intact
 * across compactions that move the object.
 */
class CompactingHeapReadOnlySegmentTest {

    @Test
    void aReadOnlySegmentHoldsTheObjectAndRefusesWrites() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(24);
            heap.setLong(h, 8, 42);
            MemorySegment s = heap.readOnlySegment(h);
            assertTrue(s.isReadOnly());
            assertEquals(24, s.byteSize());
            assertEquals(42, s.get(ValueLayout.JAVA_LONG, 8));
            assertEquals(42, heap.getLong(h, 8));
            assertThrows(IllegalArgumentException.class, () -> s.set(ValueLayout.JAVA_LONG, 0, 1));
            assertThrows(IllegalArgumentException.class,
                    () -> heap.read(h, seg -> { seg.set(ValueLayout.JAVA_LONG, 0, 1); return null; }),
                    "read() hands its reader a read-only segment");
            assertEquals(0, heap.getLong(h, 0), "nothing written");
        }
    }

    @Test
    void staleForeignAndClosedHandlesThrowAsForSegment() {
        CompactingHeap heap = CompactingHeap.create();
        try (CompactingHeap other = CompactingHeap.create()) {
            long h = heap.allocate(16);
            long foreign = other.allocate(16);
            assertThrows(StaleHandleException.class, () -> heap.readOnlySegment(foreign));
            heap.free(h);
            assertThrows(StaleHandleException.class, () -> heap.readOnlySegment(h));
            long live = heap.allocate(16);
            heap.close();
            assertThrows(IllegalStateException.class, () -> heap.readOnlySegment(live));
        }
    }

    @Test
    void objectsReadIntactAcrossCompactionsThatMoveThem() {
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(1).build()) {
            long[] h = new long[4096];
            for (int i = 0; i < h.length; i++) {
                h[i] = heap.allocate(200);
                heap.setLong(h[i], 192, i);
            }
            for (int i = 0; i < h.length; i += 2) {
                heap.free(h[i]); // every page half empty: compaction moves half the objects
                h[i] = 0;
            }
            long moved = 0;
            for (int round = 0; round < 3; round++) {
                moved += heap.compact(); // under a read of every object before the next
                for (int i = 1; i < h.length; i += 2) {
                    long index = i;
                    assertEquals(index, (long) heap.read(h[i], s -> s.get(ValueLayout.JAVA_LONG, 192)), "object " + i);
                }
            }
            assertTrue(moved > 0, "the compactions moved objects");
            assertTrue(heap.stats().maxNotFullPages() <= 1,
                    "compact() returns with the slots its moves left released: the bound holds");
        }
    }
}
