package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.SpanHeapOutOfMemoryError;

/**
 * The compacting heap's own system calls refused (the fault injection, for the calls the
 * native core's {@code sh_debug_fail_os_call} does not reach: pages mapped one by one, large
 * segments, objects mapped alone). A refused call fails the allocation with
 * {@link SpanHeapOutOfMemoryError}, changes no statistic, leaks no mapping, leaves every other
 * object intact, and the heap works again once the OS agrees.
 */
class OsMemoryFailureTest {

    @AfterEach
    void disarm() {
        OsMemory.failCalls(OsMemory.Call.MAP, 0, 0);
    }

    private static MemorySegment pattern(int size, long seed) {
        MemorySegment s = MemorySegment.ofArray(new byte[size]);
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        return s;
    }

    private static void assertHolds(CompactingHeap heap, long handle, MemorySegment expected) {
        MemorySegment copy = MemorySegment.ofArray(new byte[(int) expected.byteSize()]);
        heap.read(handle, s -> {
            MemorySegment.copy(s, 0, copy, 0, expected.byteSize());
            return null;
        });
        assertEquals(-1, copy.mismatch(expected), "object changed");
    }

    private static void assertSameCounts(CompactingHeapStats before, CompactingHeapStats after) {
        assertEquals(before.liveObjects(), after.liveObjects(), "live objects");
        assertEquals(before.liveBytes(), after.liveBytes(), "live bytes");
        assertEquals(before.committedBytes(), after.committedBytes(), "committed bytes");
        assertEquals(before.largeObjects(), after.largeObjects(), "large objects");
    }

    @Test
    void refusedPageMappingFailsTheAllocationOnly() {
        long mappedBefore = OsMemory.MAPPED.get();
        try (CompactingHeap heap = CompactingHeap.builder().mappedPages().build()) {
            MemorySegment canaryBytes = pattern(200, 1);
            long canary = heap.allocateFrom(canaryBytes);
            CompactingHeapStats before = heap.stats();
            long mapped = OsMemory.MAPPED.get();

            OsMemory.failCalls(OsMemory.Call.MAP, 1, 1);
            SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class,
                    () -> heap.allocate(3000)); // a class with no page yet: needs a new page
            assertFalse(e.isByteLimit());
            assertTrue(e.getMessage().contains("mmap"), e.getMessage());
            assertSameCounts(before, heap.stats());
            assertEquals(mapped, OsMemory.MAPPED.get(), "nothing mapped");
            assertHolds(heap, canary, canaryBytes);

            MemorySegment bytes = pattern(3000, 2);
            long h = heap.allocateFrom(bytes); // the OS agrees again
            assertHolds(heap, h, bytes);
            heap.free(h);
            heap.free(canary);
        }
        assertEquals(mappedBefore, OsMemory.MAPPED.get(), "close unmapped everything");
    }

    @Test
    void refusedLargeMappingFailsTheAllocationOnly() {
        long mappedBefore = OsMemory.MAPPED.get();
        try (CompactingHeap heap = CompactingHeap.create()) {
            MemorySegment canaryBytes = pattern(500_000, 3); // a run of a large segment
            long canary = heap.allocateFrom(canaryBytes);
            CompactingHeapStats before = heap.stats();
            long mapped = OsMemory.MAPPED.get();

            OsMemory.failCalls(OsMemory.Call.MAP, 1, 2);
            for (int i = 0; i < 2; i++) {
                SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class,
                        () -> heap.allocate(6 << 20)); // above a segment's share: a mapping of its own
                assertTrue(e.getMessage().contains("mmap"), e.getMessage());
            }
            assertSameCounts(before, heap.stats());
            assertEquals(mapped, OsMemory.MAPPED.get(), "nothing mapped");
            assertHolds(heap, canary, canaryBytes);

            MemorySegment bytes = pattern(6 << 20, 4);
            long h = heap.allocateFrom(bytes);
            assertHolds(heap, h, bytes);
            assertEquals(before.largeObjects() + 1, heap.stats().largeObjects());
            heap.free(h);
            heap.free(canary);
        }
        assertEquals(mappedBefore, OsMemory.MAPPED.get(), "close unmapped everything");
    }

    @Test
    void refusedSegmentMappingFailsTheAllocationOnly() {
        long mappedBefore = OsMemory.MAPPED.get();
        try (CompactingHeap heap = CompactingHeap.create()) {
            MemorySegment canaryBytes = pattern(1000, 6);
            long canary = heap.allocateFrom(canaryBytes);
            CompactingHeapStats before = heap.stats();
            long mapped = OsMemory.MAPPED.get();

            OsMemory.failCalls(OsMemory.Call.MAP, 1, 1); // the first large segment
            SpanHeapOutOfMemoryError e = assertThrows(SpanHeapOutOfMemoryError.class, () -> heap.allocate(1 << 20));
            assertTrue(e.getMessage().contains("mmap"), e.getMessage());
            assertSameCounts(before, heap.stats());
            assertEquals(mapped, OsMemory.MAPPED.get(), "nothing mapped");

            MemorySegment bytes = pattern(1 << 20, 7);
            long h = heap.allocateFrom(bytes); // the OS agrees again: the segment is mapped now
            assertHolds(heap, h, bytes);
            assertHolds(heap, canary, canaryBytes);
            assertEquals(before.largeObjects() + 1, heap.stats().largeObjects());
            heap.free(h);
            heap.free(canary);
        }
        assertEquals(mappedBefore, OsMemory.MAPPED.get(), "close unmapped everything");
    }

    /**
     * Windows of refused mappings while four threads churn checksummed objects of all sizes on
     * mapped pages with the compactor running: the refused allocations throw, everything else
     * holds its bytes, and the heap frees and unmaps all of it at the end.
     */
    @Test
    void theHeapKeepsWorkingThroughWindowsOfRefusedMappings() throws Exception {
        long mappedBefore = OsMemory.MAPPED.get();
        AtomicLong refusedAllocations = new AtomicLong();
        try (CompactingHeap heap = CompactingHeap.builder().mappedPages().build()) {
            List<Thread> threads = new ArrayList<>();
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int t = 0; t < 4; t++) {
                int id = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        SplittableRandom r = new SplittableRandom(id);
                        long[] handles = new long[256];
                        MemorySegment[] expected = new MemorySegment[256];
                        for (int op = 0; op < 6_000; op++) {
                            int k = r.nextInt(handles.length);
                            if (handles[k] != 0) {
                                assertHolds(heap, handles[k], expected[k]);
                                heap.free(handles[k]);
                                handles[k] = 0;
                            }
                            int size = r.nextInt(50) == 0 ? 20_000 + r.nextInt(300_000) : 16 + r.nextInt(6000);
                            MemorySegment bytes = pattern(size, r.nextLong());
                            try {
                                handles[k] = heap.allocateFrom(bytes);
                                expected[k] = bytes;
                            } catch (SpanHeapOutOfMemoryError refused) {
                                refusedAllocations.incrementAndGet();
                            }
                        }
                        for (int k = 0; k < handles.length; k++) {
                            if (handles[k] != 0) {
                                assertHolds(heap, handles[k], expected[k]);
                                heap.free(handles[k]);
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (int window = 0; threads.stream().anyMatch(Thread::isAlive); window++) {
                OsMemory.failCalls(OsMemory.Call.MAP, 1 + window % 3, 4);
                Thread.sleep(2);
            }
            for (Thread t : threads) {
                t.join();
            }
            disarm();
            assertTrue(failures.isEmpty(), () -> "failures: " + failures);
            heap.compact();
            assertEquals(0, heap.stats().liveObjects());
            assertEquals(0, heap.stats().liveBytes());
        }
        assertTrue(refusedAllocations.get() > 0, "no allocation was refused: the test tested nothing");
        assertEquals(mappedBefore, OsMemory.MAPPED.get(), "close unmapped everything");
    }
}
