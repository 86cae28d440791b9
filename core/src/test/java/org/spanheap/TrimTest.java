package org.spanheap;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link SpanHeap#trim()} and {@link CompactingHeap#trim()}. */
class TrimTest {

    private static final long MIB = 1L << 20;

    @Test
    @Tag("native-engine") // the native engine's spans and kept mappings
    void spanHeapTrimReleasesFreeSpansAndKeptMappings() {
        try (SpanHeap heap = SpanHeap.create()) {
            // 64 blocks of 200 000 bytes (too big for the thread cache): about 7 spans of
            // 2 MiB that the pool keeps resident once free; and a 4 MiB mapping kept for reuse
            MemorySegment[] blocks = new MemorySegment[64];
            for (int i = 0; i < blocks.length; i++) {
                blocks[i] = heap.allocate(200_000);
            }
            MemorySegment big = heap.allocate(4 * MIB);
            for (MemorySegment b : blocks) {
                heap.free(b);
            }
            heap.free(big);
            long before = heap.stats().committedBytes();
            assertTrue(before >= 16 * MIB, "committed " + before);

            long released = heap.trim();
            long after = heap.stats().committedBytes();
            System.out.printf("SpanHeap.trim: committed %d -> %d bytes, trim() returned %d%n",
                    before, after, released);
            assertTrue(released >= 16 * MIB, "released " + released);
            assertEquals(before - after, released);
            assertEquals(after, heap.stats().residentBytes());
            assertEquals(0, heap.trim(), "nothing left to release");

            // the released spans are reused
            for (int i = 0; i < blocks.length; i++) {
                blocks[i] = heap.allocate(200_000);
                blocks[i].set(ValueLayout.JAVA_LONG, 199_992, i);
            }
            for (int i = 0; i < blocks.length; i++) {
                assertEquals(i, blocks[i].get(ValueLayout.JAVA_LONG, 199_992));
                heap.free(blocks[i]);
            }
        }
    }

    @Test
    @Tag("native-engine") // the native engine's thread caches
    void spanHeapTrimReturnsTheThreadCache() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment[] blocks = new MemorySegment[20_000];
            for (int i = 0; i < blocks.length; i++) {
                blocks[i] = heap.allocate(48);
            }
            for (MemorySegment b : blocks) {
                heap.free(b);
            }
            assertTrue(heap.stats().cachedBytes() > 0, "the thread cache holds free blocks");
            heap.trim();
            assertEquals(0, heap.stats().cachedBytes());
        }
    }

    @Test
    void spanHeapTrimOnAnIdleHeapReleasesNothing() {
        try (SpanHeap heap = SpanHeap.create()) {
            assertEquals(0, heap.trim());
            MemorySegment s = heap.allocate(64);
            assertEquals(0, heap.trim(), "a span in use is not released");
            heap.free(s);
        }
    }

    @Test
    void spanHeapTrimAfterCloseThrows() {
        SpanHeap heap = SpanHeap.create();
        heap.close();
        assertThrows(IllegalStateException.class, heap::trim);
    }

    @Test
    void compactingHeapTrimReleasesReserveAndKeptMappings() {
        // reclaim batch 0: every free is reclaimed at once, so no background thread interferes
        try (CompactingHeap heap = CompactingHeap.builder().reclaimBatchBytes(0).build()) {
            long[] small = new long[20_000];
            for (int i = 0; i < small.length; i++) {
                small[i] = heap.allocate(1000);
            }
            long[] large = new long[8];
            for (int i = 0; i < large.length; i++) {
                large[i] = heap.allocate(100_000);     // over a quarter page: mapped alone
            }
            for (long h : small) {
                heap.free(h);
            }
            for (long h : large) {
                heap.free(h);
            }
            CompactingHeapStats st = heap.stats();
            assertEquals(0, st.liveObjects());
            long before = st.committedBytes();
            assertTrue(before >= MIB, "committed " + before);

            long released = heap.trim();
            long after = heap.stats().committedBytes();
            System.out.printf("CompactingHeap.trim: committed %d -> %d bytes, trim() returned %d%n",
                    before, after, released);
            assertTrue(released >= MIB, "released " + released);
            assertEquals(before - after, released);
            assertEquals(0, after, "no object left, nothing held");
            assertEquals(0, heap.trim());

            long h = heap.allocate(1000);
            heap.setLong(h, 0, 7);
            assertEquals(7, heap.getLong(h, 0));
        }
    }

    @Test
    void compactingHeapTrimReclaimsTheLimbo() {
        // a large batch: the frees wait in the limbo until a round, here the trim's
        try (CompactingHeap heap = CompactingHeap.builder().reclaimBatchBytes(1L << 30).backgroundCompaction(false)
                .build()) {
            long[] small = new long[5_000];
            for (int i = 0; i < small.length; i++) {
                small[i] = heap.allocate(1000);
            }
            for (long h : small) {
                heap.free(h);
            }
            assertTrue(heap.stats().pendingReclaimBytes() > 0, "frees wait in the limbo");
            long before = heap.stats().committedBytes();
            long released = heap.trim();
            assertEquals(before, released, "every page emptied and released");
            assertEquals(0, heap.stats().pendingReclaimBytes());
        }
    }

    @Test
    void compactingHeapTrimOnAnIdleHeapReleasesNothing() {
        try (CompactingHeap heap = CompactingHeap.create()) {
            assertEquals(0, heap.trim());
        }
    }

    @Test
    void compactingHeapTrimAfterCloseOrInsideReadThrows() {
        CompactingHeap heap = CompactingHeap.create();
        long h = heap.allocate(64);
        long other = heap.allocate(64);
        boolean[] first = {true};
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> heap.read(h, s -> {
            if (first[0]) {
                first[0] = false;
                heap.free(other); // a freed block for the trim's round: an epoch change, then a rerun
            }
            heap.trim();
            return s.get(ValueLayout.JAVA_LONG, 0); // the round closed the epoch: this access fails, a rerun
        }));
        assertTrue(e.getMessage().contains("trim()"), e.getMessage());
        heap.close();
        assertThrows(IllegalStateException.class, heap::trim);
    }
}
