package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.SpanHeap;
import org.spanheap.StaleHandleException;

class CompactingHeapApiTest {

    @Test
    void allocateWriteReadFree() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(100);
            assertEquals(100, heap.size(h));
            assertEquals(100L, (long) heap.read(h, MemorySegment::byteSize));
            for (int i = 0; i < 100; i++) {
                int at = i;
                assertEquals((byte) 0, (byte) heap.read(h, s -> s.get(ValueLayout.JAVA_BYTE, at)), "allocate zeroes");
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
            long small = heap.maxSizeClassObjectSize();
            assertEquals(16 * 1024, small, "a quarter of the default 64 KiB page");
            for (long size : new long[] {small, small + 1, 64 * 1024, 1L << 20, 64L << 20}) {
                long h = heap.allocate(size);
                assertEquals(size, heap.size(h));
                // read, not segment(): a background round may change the epoch between the two calls
                assertEquals(size, (long) heap.read(h, MemorySegment::byteSize));
                assertEquals(0L, (long) heap.read(h, s -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, size - 8)), "zeroed");
                heap.setLong(h, 0, size);
                heap.setLong(h, size - 8, ~size);
                assertEquals(size, heap.getLong(h, 0));
                assertEquals(~size, heap.getLong(h, size - 8));
                assertEquals(size > small ? 1 : 0, heap.stats().largeObjects(), "large objects are counted");
                assertTrue(heap.stats().committedBytes() >= size);
                heap.free(h);
                assertThrows(StaleHandleException.class, () -> heap.segment(h));
                assertThrows(StaleHandleException.class, () -> heap.free(h), "double free of a large object");
            }
            assertThrows(IllegalArgumentException.class, () -> heap.allocate(-1));
            assertThrows(IllegalArgumentException.class, () -> heap.allocate(CompactingHeap.MAX_OBJECT_SIZE + 1));
            assertThrows(OutOfMemoryError.class, () -> heap.allocate(CompactingHeap.MAX_OBJECT_SIZE),
                    "the OS refuses 4 TiB");
            long h = heap.allocate(100);
            heap.setLong(h, 0, 5);
            assertEquals(5, heap.getLong(h, 0), "still usable after a refused allocation");
            heap.free(h0);
            heap.compact();
            assertEquals(1, heap.stats().liveObjects());
            assertEquals(0, heap.stats().largeBytes(), "every large mapping was unmapped");
        }
    }

    /** An object of exactly the page size with 1 GiB pages: once it set the MOVING bit instead of its size. */
    @Test
    void objectOfAGibibyteHasItsSize() {
        try (CompactingHeap heap = CompactingHeap.builder().pageSize(1L << 30).mappedPages().build()) {
            long h = heap.allocate(1L << 30);
            assertEquals(1L << 30, heap.size(h));
            heap.setLong(h, (1L << 30) - 8, 42);
            assertEquals(42, (long) heap.read(h, s -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, (1L << 30) - 8)));
            assertEquals(1L << 30, heap.stats().liveBytes());
            heap.free(h);
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    @Test
    void allocateFromCopiesTheContents() {
        try (CompactingHeap heap = CompactingHeap.create(); Arena arena = Arena.ofConfined()) {
            for (long size : new long[] {0, 7, 100, 5000, 40_000}) {
                MemorySegment src = arena.allocate(size);
                for (long i = 0; i < size; i++) {
                    src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
                }
                long h = heap.allocateFrom(src);
                assertEquals(size, heap.size(h));
                assertEquals(-1L, (long) heap.read(h, s -> s.mismatch(src)), "size " + size);
                long copy = heap.allocateFrom(heap.segment(h)); // from an object of the same heap
                assertEquals(-1L, (long) heap.read(copy, s -> s.mismatch(src)));
            }
            MemorySegment closed;
            try (Arena a = Arena.ofConfined()) {
                closed = a.allocate(64);
            }
            long live = heap.stats().liveObjects();
            assertThrows(IllegalStateException.class, () -> heap.allocateFrom(closed));
            assertEquals(live, heap.stats().liveObjects(), "a failed copy leaves nothing behind");
        }
    }

    @Test
    void allocateWithAnInitializer() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            for (long size : new long[] {0, 24, 3000, 100_000}) {
                long h = heap.allocate(size, s -> s.fill((byte) 0x5a));
                assertEquals(size, heap.size(h));
                for (long i = 0; i < size; i += 997) {
                    long at = i;
                    assertEquals((byte) 0x5a, (byte) heap.read(h, s -> s.get(ValueLayout.JAVA_BYTE, at)));
                }
            }
            long live = heap.stats().liveObjects();
            RuntimeException mine = new RuntimeException("initializer failed");
            for (long size : new long[] {24, 100_000}) {
                assertEquals(mine, assertThrows(RuntimeException.class, () -> heap.allocate(size, s -> {
                    throw mine;
                })));
            }
            assertEquals(live, heap.stats().liveObjects(), "a failed initializer leaves nothing behind");
        }
    }

    /** Two fresh heaps hand out the same first index: the tag in the handle tells them apart. */
    @Test
    void handleOfAnotherHeapThrows() {
        try (CompactingHeap a = CompactingHeap.create(); CompactingHeap b = CompactingHeap.create()) {
            long ha = a.allocate(64);
            long hb = b.allocate(64);
            a.setLong(ha, 0, 1);
            b.setLong(hb, 0, 2);
            assertEquals((int) ha, (int) hb, "same table index");
            assertThrows(StaleHandleException.class, () -> a.segment(hb));
            assertThrows(StaleHandleException.class, () -> a.read(hb, s -> s.get(ValueLayout.JAVA_LONG, 0)));
            assertThrows(StaleHandleException.class, () -> a.free(hb));
            assertThrows(StaleHandleException.class, () -> b.size(ha));
            assertEquals(1, a.getLong(ha, 0));
            assertEquals(2, b.getLong(hb, 0));
        }
    }

    @Test
    void compactInsideReadIsAClearException() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            long h = heap.allocate(64);
            long other = heap.allocate(64);
            boolean[] first = {true};
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> heap.read(h, s -> {
                if (first[0]) {
                    first[0] = false;
                    heap.free(other); // so that compact() has a freed block to reclaim: an epoch change
                }
                heap.compact();
                return s.get(ValueLayout.JAVA_LONG, 0);
            }));
            assertTrue(e.getMessage().contains("inside a read or write function"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> heap.write(h, s -> {
                heap.relocate(h);
                s.set(ValueLayout.JAVA_LONG, 0, 1);
            }));
            assertEquals(0, heap.getLong(h, 0));
            heap.compact(); // outside a function it works
        }
    }

    /** The span heap given to the builder is closed first: once a crash (SIGSEGV) on the next read. */
    @Test
    void spanHeapClosedFirstDoesNotCrash() {
        SpanHeap spans = SpanHeap.create();
        try (CompactingHeap heap = CompactingHeap.builder().spanHeap(spans).build()) {
            long h = heap.allocate(64);
            heap.setLong(h, 0, 9);
            spans.close();
            assertEquals(9, heap.getLong(h, 0), "pages stay mapped while the compacting heap holds a reference");
            long[] more = new long[2000];
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                for (int i = 0; i < more.length; i++) {
                    more[i] = heap.allocate(64); // soon needs a new page
                }
            });
            assertTrue(e.getMessage().contains("span heap"), e.getMessage());
            heap.free(h);
            heap.compact();
        }
        assertThrows(IllegalStateException.class, () -> CompactingHeap.builder().spanHeap(spans).build());
    }

    @Test
    void builderRejectsBadConfiguration() {
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().notFullPagesPerClass(0));
        assertThrows(IllegalArgumentException.class, () -> CompactingHeap.builder().movedBytesPerRound(0));
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
            heap.relocate(h); // changes the epoch
            assertThrows(IllegalStateException.class, () -> before.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(7, heap.getLong(h, 0));
            int[] calls = {0};
            long v = heap.read(h, s -> {
                if (calls[0]++ == 0) {
                    heap.relocate(h); // the epoch closes under the reader: read must rerun it
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
        long large = heap.allocate(1 << 20);
        MemorySegment s = heap.segment(h);
        MemorySegment l = heap.segment(large);
        heap.close();
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_LONG, 0));
        assertThrows(IllegalStateException.class, () -> l.get(ValueLayout.JAVA_LONG, 0));
        assertThrows(IllegalStateException.class, () -> heap.allocate(8));
        assertThrows(IllegalStateException.class, () -> heap.allocate(1 << 20));
        assertThrows(IllegalStateException.class, () -> heap.getLong(h, 0));
        assertThrows(IllegalStateException.class, () -> heap.size(h));
        assertThrows(IllegalStateException.class, () -> heap.segment(h));
        assertThrows(IllegalStateException.class, () -> heap.free(h));
        assertThrows(IllegalStateException.class, heap::stats);
        assertThrows(IllegalStateException.class, heap::compact);
        assertThrows(IllegalStateException.class, () -> heap.relocate(h));
        heap.close(); // idempotent
    }

    @Test
    void compactionMovesObjectsKeepsContentsAndReturnsPages() {
        try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build()) {
            int n = 20_000;
            long[] hs = new long[n];
            for (int i = 0; i < n; i++) {
                hs[i] = heap.allocate(48);
                heap.setLong(hs[i], 0, hs[i]);
                heap.setLong(hs[i], 40, ~hs[i]);
            }
            long pagesFull = heap.stats().pages();
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
            assertTrue(st.pages() < pagesFull / 2, st.pages() + " pages vs " + pagesFull);
            assertTrue(st.committedBytes() <= (st.pages() + 16) * heap.pageSize(),
                    "committed: the pages in use and a reserve of at most 16 pages");
            for (int i = 0; i < n; i++) {
                if (!freed[i]) {
                    assertEquals(hs[i], heap.getLong(hs[i], 0));
                    assertEquals(~hs[i], heap.getLong(hs[i], 40));
                }
            }
        }
    }
}
