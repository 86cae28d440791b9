package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.StaleHandleException;

class CompactingHeapApiTest {

    @Test
    void allocateWriteReadFree() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(100);
            assertEquals(100, heap.size(h));
            MemorySegment s = heap.segment(h);
            assertEquals(100, s.byteSize());
            for (int i = 0; i < 100; i++) {
                assertEquals(0, s.get(ValueLayout.JAVA_BYTE, i), "allocate zeroes");
            }
            heap.setLong(h, 8, 0x1234_5678_9abc_def0L);
            assertEquals(0x1234_5678_9abc_def0L, heap.getLong(h, 8));
            assertEquals(0x1234_5678_9abc_def0L, (long) heap.read(h, seg -> seg.get(ValueLayout.JAVA_LONG_UNALIGNED, 8)));
            assertThrows(IndexOutOfBoundsException.class, () -> heap.getLong(h, 96), "segment is sized to the object");
            heap.free(h);
            assertEquals(0, heap.stats().liveObjects());
        }
    }

    @Test
    void sizesAtTheEdges() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h0 = heap.allocate(0);
            assertEquals(0, heap.size(h0));
            long hMax = heap.allocate(heap.maxObjectSize());
            assertEquals(heap.maxObjectSize(), heap.segment(hMax).byteSize());
            assertThrows(IllegalArgumentException.class, () -> heap.allocate(-1));
            assertThrows(IllegalArgumentException.class, () -> heap.allocate(heap.maxObjectSize() + 1));
            heap.free(h0);
            heap.free(hMax);
        }
    }

    @Test
    void builderRejectsBadConfiguration() {
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().kappa(0));
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().iota(0));
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().pageSize(3000));
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().reclaimBatchBytes(-1));
    }

    @Test
    void freedHandleThrowsEverywhere() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(32);
            heap.free(h);
            assertThrows(StaleHandleException.class, () -> heap.segment(h));
            assertThrows(StaleHandleException.class, () -> heap.size(h));
            assertThrows(StaleHandleException.class, () -> heap.getLong(h, 0));
            assertThrows(StaleHandleException.class, () -> heap.read(h, s -> 1));
            assertThrows(StaleHandleException.class, () -> heap.free(h), "double free");
        }
    }

    @Test
    void staleHandleDoesNotReachTheNewOccupant() {
        // reclaim on every free, so the entry and the block are reused at once
        try (CompactingHeap heap = CompactingHeap.builder().reclaimBatchBytes(0).build()) {
            long old = heap.allocate(64);
            heap.setLong(old, 0, 1);
            heap.free(old);
            long fresh = heap.allocate(64);
            assertEquals((int) old, (int) fresh, "same table index is reused");
            assertNotEquals(old, fresh, "with a new generation");
            heap.setLong(fresh, 0, 2);
            assertThrows(StaleHandleException.class, () -> heap.getLong(old, 0));
            assertThrows(StaleHandleException.class, () -> heap.setLong(old, 0, 3));
            assertThrows(StaleHandleException.class, () -> heap.free(old));
            assertEquals(2, heap.getLong(fresh, 0));
        }
    }

    @Test
    void forgedHandlesThrow() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(16);
            long[] forged = {0L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, h + 1, h ^ (1L << 32), h & 0xFFFF_FFFFL,
                    (h & ~0xFFFF_FFFFL) | 0x7FFF_FFFFL, (h & ~0xFFFF_FFFFL) | 0x8000_0000L,
                    (h & ~0xFFFF_FFFFL) | 4095, (1L << 32)};
            for (long f : forged) {
                assertThrows(StaleHandleException.class, () -> heap.segment(f), () -> Long.toHexString(f));
                assertThrows(StaleHandleException.class, () -> heap.free(f), () -> Long.toHexString(f));
                assertThrows(StaleHandleException.class, () -> heap.size(f), () -> Long.toHexString(f));
            }
            Random rnd = new Random(5);
            int accepted = 0;
            for (int i = 0; i < 100_000; i++) {
                long f = rnd.nextLong();
                try {
                    heap.segment(f);
                    accepted++;
                } catch (StaleHandleException expected) {
                    // fine
                }
            }
            assertEquals(0, accepted);
            assertEquals(16, heap.size(h), "the real handle still works");
        }
    }

    @Test
    void segmentOfAClosedEpochThrowsAndReadRetries() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(64);
            heap.setLong(h, 0, 7);
            MemorySegment before = heap.segment(h);
            heap.compact(); // changes the epoch
            assertThrows(IllegalStateException.class, () -> before.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(7, heap.getLong(h, 0));
            int[] calls = {0};
            long v = heap.read(h, s -> {
                if (calls[0]++ == 0) {
                    heap.compact(); // the epoch closes under the reader: read must rerun it
                }
                return s.get(ValueLayout.JAVA_LONG, 0);
            });
            assertEquals(7, v);
            assertEquals(2, calls[0]);
        }
    }

    @Test
    void userIllegalStateExceptionIsNotSwallowed() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(8);
            assertThrows(IllegalStateException.class, () -> heap.read(h, s -> {
                throw new IllegalStateException("mine");
            }));
        }
    }

    @Test
    void closedHeapThrows() {
        CompactingHeap heap = CompactingHeap.create();
        long h = heap.allocate(8);
        MemorySegment s = heap.segment(h);
        heap.close();
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_LONG, 0));
        assertThrows(IllegalStateException.class, () -> heap.allocate(8));
        assertThrows(IllegalStateException.class, () -> heap.getLong(h, 0));
        assertThrows(IllegalStateException.class, heap::compact);
        heap.close(); // idempotent
    }

    @Test
    void compactionMovesObjectsKeepsContentsAndReturnsPages() {
        try (CompactingHeap heap = CompactingHeap.builder().kappa(CompactingHeap.KAPPA_INFINITE).build()) {
            int n = 20_000;
            long[] hs = new long[n];
            for (int i = 0; i < n; i++) {
                hs[i] = heap.allocate(48);
                heap.setLong(hs[i], 0, hs[i]);
                heap.setLong(hs[i], 40, ~hs[i]);
            }
            long committedFull = heap.stats().committedBytes();
            Random rnd = new Random(1);
            boolean[] freed = new boolean[n];
            for (int i = 0; i < n; i++) {
                if (rnd.nextInt(4) != 0) {
                    heap.free(hs[i]);
                    freed[i] = true;
                }
            }
            heap.compact();
            var st = heap.stats();
            assertTrue(st.movedBytes() > 0, "something moved");
            assertTrue(st.maxNotFullPages() <= 1, "compact() leaves at most one not-full page per class");
            assertTrue(st.committedBytes() < committedFull / 2, st.committedBytes() + " vs " + committedFull);
            for (int i = 0; i < n; i++) {
                if (!freed[i]) {
                    assertEquals(hs[i], heap.getLong(hs[i], 0));
                    assertEquals(~hs[i], heap.getLong(hs[i], 40));
                }
            }
        }
    }
}
