package org.spanheap;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.spanheap.internal.OsFaults;
import org.spanheap.internal.OsFaults.Kind;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SpanHeap} when the OS refuses memory, through the native core's test-only fault
 * injector ({@link OsFaults}): {@link SpanHeapOutOfMemoryError} (not the byte limit), nothing
 * left counted, blocks allocated before intact, and the heap works again once the OS agrees.
 * The injector is process-wide; every test disarms it afterwards.
 */
@Tag("native-engine") // fault injection into the native core's system calls
class OsFailureTest {
    private static final long MiB = 1L << 20;

    @AfterEach
    void disarm() {
        OsFaults.disarmAll();
    }

    private static void fill(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i += Long.BYTES) {
            s.set(JAVA_LONG, i, seed ^ i);
        }
    }

    private static void assertIntact(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i += Long.BYTES) {
            if (s.get(JAVA_LONG, i) != (seed ^ i)) {
                throw new AssertionError("block changed at offset " + i);
            }
        }
    }

    @Test
    void refusedReservationFailsCreation() {
        OsFaults.fail(Kind.MMAP, 1, -1);
        SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class, SpanHeap::create);
        assertFalse(e.isByteLimit());
        OsFaults.disarm(Kind.MMAP);
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment s = heap.allocate(64);
            fill(s, 1);
            assertIntact(s, 1);
            heap.free(s);
        }
    }

    /** With a byte limit of 8 MiB, 6 MiB fit after the failure only if it gave its share back. */
    @Test
    void refusedLargeMappingThrowsAndLeavesNothingCounted() {
        try (SpanHeap heap = SpanHeap.builder().reserveBytes(1L << 32).byteLimit(8 * MiB).build()) {
            MemorySegment small = heap.allocate(1000);
            fill(small, 2);
            HeapStats before = heap.stats();

            OsFaults.fail(Kind.MMAP, 1, -1);
            long calls = OsFaults.calls(Kind.MMAP);
            SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class,
                    () -> heap.allocate(6 * MiB));
            assertFalse(e.isByteLimit());
            // the heap retries once after reclaiming its thread caches; both were refused
            assertEquals(calls + 2, OsFaults.calls(Kind.MMAP));
            HeapStats after = heap.stats();
            assertEquals(before.liveBytes(), after.liveBytes());
            assertEquals(before.largeCount(), after.largeCount());
            assertEquals(before.largeBytes(), after.largeBytes());
            // the retry's reclaim may have given cached blocks back, so less may be counted
            assertTrue(after.limitedBytes() <= before.limitedBytes(),
                    () -> after.limitedBytes() + " counted against the limit, " + before.limitedBytes() + " before");

            OsFaults.disarm(Kind.MMAP);
            MemorySegment large = heap.allocate(6 * MiB);
            fill(large, 3);
            assertIntact(small, 2);
            assertIntact(large, 3);
            heap.free(large);
            heap.free(small);
            assertEquals(0, heap.stats().liveBytes());
            assertEquals(0, heap.stats().largeCount());
        }
    }

    @Test
    void singleRefusedMappingIsRetried() {
        try (SpanHeap heap = SpanHeap.builder().reserveBytes(1L << 32).build()) {
            OsFaults.fail(Kind.MMAP, 1, 1);
            long calls = OsFaults.calls(Kind.MMAP);
            MemorySegment large = heap.allocate(4 * MiB);
            assertEquals(calls + 2, OsFaults.calls(Kind.MMAP));
            fill(large, 4);
            assertIntact(large, 4);
            heap.free(large);
            assertEquals(0, heap.stats().liveBytes());
        }
    }

    /** A new heap's first small block needs its first span, and that the arena's first commit. */
    @Test
    void refusedCommitThrowsFromSmallAllocation() {
        try (SpanHeap heap = SpanHeap.builder().reserveBytes(1L << 32).build()) {
            OsFaults.fail(Kind.MPROTECT, 1, -1);
            long calls = OsFaults.calls(Kind.MPROTECT);
            SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class,
                    () -> heap.allocate(64));
            assertFalse(e.isByteLimit());
            assertEquals(calls + 2, OsFaults.calls(Kind.MPROTECT));
            HeapStats after = heap.stats();
            assertEquals(0, after.liveBytes());
            assertEquals(0, after.cachedBytes());
            assertEquals(0, after.limitedBytes());
            assertEquals(0, after.committedBytes());
            assertEquals(0, after.spansCarved());

            OsFaults.disarm(Kind.MPROTECT);
            MemorySegment s = heap.allocate(64);
            fill(s, 5);
            assertIntact(s, 5);
            assertEquals(1, heap.stats().spansCarved());
            heap.free(s);
            assertEquals(0, heap.stats().liveBytes());
        }
    }
}
