package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;

/** {@link CompactingHeap#residentBytes()}: what the OS says is in RAM, against what was written and what is committed. */
class CompactingHeapResidentBytesTest {

    /** Where the heap can ask the OS; elsewhere residentBytes() is the committed bytes. */
    private static final boolean LINUX = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux");
    private static final int OBJECTS = 512;
    private static final int OBJECT_BYTES = 4096;

    @Test
    void countsWrittenObjectsAndNeverMoreThanCommitted() {
        byte[] bytes = new byte[OBJECT_BYTES];
        Arrays.fill(bytes, (byte) 0x5A);
        MemorySegment contents = MemorySegment.ofArray(bytes);
        for (boolean mappedPages : new boolean[] {false, true}) {
            try (CompactingHeap heap = mappedPages ? CompactingHeap.builder().mappedPages().build() : CompactingHeap.create()) {
                long[] handles = new long[OBJECTS];
                for (int i = 0; i < OBJECTS; i++) {
                    handles[i] = heap.allocateFrom(contents); // every byte of every block written
                }
                long resident = heap.residentBytes();
                long committed = heap.stats().committedBytes();
                assertTrue(resident <= committed, "resident " + resident + " > committed " + committed);
                if (LINUX) {
                    assertTrue(resident >= (long) OBJECTS * OBJECT_BYTES,
                            "2 MiB written, resident only " + resident + " (mapped pages: " + mappedPages + ")");
                } else {
                    assertEquals(committed, resident);
                }
                for (long h : handles) {
                    heap.free(h);
                }
                heap.trim(); // reclaims the freed blocks and gives the emptied pages back
                long afterTrim = heap.residentBytes();
                assertTrue(afterTrim <= heap.stats().committedBytes());
                if (LINUX) {
                    assertTrue(afterTrim < resident / 4, "after freeing everything and trim(): " + afterTrim
                            + " of " + resident + " still resident (mapped pages: " + mappedPages + ")");
                }
            }
        }
    }

    @Test
    void largeObjectCountsOnlyThePagesWritten() {
        assumeTrue(LINUX, "residency is asked of Linux's mincore; elsewhere it is the committed bytes");
        long size = 8L << 20;
        try (CompactingHeap heap = CompactingHeap.create()) {
            long before = heap.residentBytes();
            long h = heap.allocate(size); // a fresh mapping: zero by the OS, nothing touched yet
            long untouched = heap.residentBytes() - before;
            assertTrue(untouched < (1L << 20), "a large object nobody wrote is resident: " + untouched);
            assertTrue(heap.stats().committedBytes() >= size, "committed counts the whole mapping");
            heap.write(h, s -> {
                for (long at = 0; at < size; at += 4096) {
                    s.set(ValueLayout.JAVA_BYTE, at, (byte) 1);
                }
            });
            long written = heap.residentBytes() - before;
            assertTrue(written >= size, "every page written, resident only " + written);
            heap.free(h);
            heap.trim(); // the mapping is unmapped
            assertTrue(heap.residentBytes() - before < (1L << 20), "after free and trim(): " + heap.residentBytes());
        }
    }

    @Test
    void closedHeapThrows() {
        CompactingHeap heap = CompactingHeap.create();
        heap.close();
        assertThrows(IllegalStateException.class, heap::residentBytes);
    }
}
