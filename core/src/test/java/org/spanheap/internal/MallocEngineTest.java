package org.spanheap.internal;

import org.spanheap.Engine;
import org.junit.jupiter.api.Test;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;
import org.spanheap.SpanHeapOutOfMemoryError;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MallocEngine} on its own, whatever engine {@code spanheap.engine} chooses for this
 * JVM: the registry's checks, the byte limit, the stats it documents, and that closing the
 * heap (or its last arena) frees every block. The public behaviour is tested by the whole
 * core suite in the {@code malloc-engine} run.
 */
class MallocEngineTest {

    private static long address(MemorySegment s) {
        return s.address();
    }

    @Test
    void statsAreTheChargedBytesOfLiveBlocks() {
        MallocEngine e = new MallocEngine(0, false);
        try {
            MemorySegment small = e.segment(e.allocateAddress(100, 1), 100);
            MemorySegment large = e.segment(e.allocateAddress(200 << 10, 1), 200 << 10);
            HeapStats s = e.stats();
            long charged = 112 + (200 << 10);                 // each rounded up to 16
            assertEquals(charged, s.liveBytes());
            assertEquals(charged, s.committedBytes());
            assertEquals(charged, s.limitedBytes());
            assertEquals(200 << 10, s.largeBytes());
            assertEquals(1, s.largeCount());
            assertEquals(List.of(0L, 0L, 0L, 0L, 0L, 0L, 0L, 0L, 0L), List.of(s.reservedBytes(), s.residentBytes(),
                    s.cachedBytes(), s.spansCarved(), s.spansHot(), s.spansFloating(), s.spansReusable(),
                    s.spansFree(), s.madviseCalls()));
            assertEquals(List.of(), s.sizeClasses());
            assertEquals(112, e.usableSize(small));
            e.free(small);
            e.free(large);
            assertEquals(0, e.stats().liveBytes());
            assertEquals(0, e.stats().largeCount());
            assertEquals(0, e.trim());
            assertEquals(Engine.MALLOC, e.kind());
        } finally {
            e.close();
        }
    }

    @Test
    void theByteLimitRefusesAndTheHeapStaysUsable() {
        MallocEngine e = new MallocEngine(1024, false);
        try {
            long a = e.allocateAddress(1000, 1);              // charged 1008
            SpanHeapOutOfMemoryError error = assertThrows(SpanHeapOutOfMemoryError.class,
                    () -> e.allocateAddress(100, 1));
            assertTrue(error.isByteLimit());
            assertEquals("cannot allocate 100 bytes: the heap's byte limit would be exceeded", error.getMessage());
            assertEquals(1008, e.stats().limitedBytes());
            e.allocateAddress(16, 1);                         // 1008 + 16 = 1024 fits exactly
            e.freeAddress(a);
            e.freeAddress(e.allocateAddress(900, 1));
        } finally {
            e.close();
        }
        assertEquals(0, e.liveBlockCount());
    }

    @Test
    void aFreeOfAnythingButALiveBlockStartIsNamedAndChangesNothing() {
        MallocEngine e = new MallocEngine(0, false);
        try {
            MemorySegment s = e.segment(e.allocateAddress(64, 1), 64);
            s.set(JAVA_LONG, 0, 42);
            var interior = assertThrows(IllegalArgumentException.class, () -> e.free(s.asSlice(16)));
            assertEquals("segment was not allocated by this heap: 0x" + Long.toHexString(address(s) + 16)
                    + " (it points inside a block)", interior.getMessage());
            try (Arena confined = Arena.ofConfined()) {
                MemorySegment foreign = confined.allocate(64);
                assertEquals("segment was not allocated by this heap: 0x" + Long.toHexString(address(foreign)),
                        assertThrows(IllegalArgumentException.class, () -> e.free(foreign)).getMessage());
            }
            assertEquals(42, s.get(JAVA_LONG, 0));
            assertEquals(1, e.liveBlockCount());
            e.free(s);
            var twice = assertThrows(IllegalStateException.class, () -> e.free(s));
            assertEquals("double free: block 0x" + Long.toHexString(address(s)) + " is already free", twice.getMessage());
            // documented difference from the native engine: a slice of a freed block is a double free too
            assertThrows(IllegalStateException.class, () -> e.free(s.asSlice(16)));
            assertEquals(0, e.liveBlockCount());
        } finally {
            e.close();
        }
    }

    @Test
    void alignedAndEmptyBlocks() {
        MallocEngine e = new MallocEngine(0, false);
        try {
            for (long alignment : new long[] {1, 16, 32, 4096, 1 << 16}) {
                long a = e.allocateAddress(10, alignment);
                assertEquals(0, a % alignment, "alignment " + alignment);
                e.freeAddress(a);
            }
            MemorySegment empty = e.segment(e.allocateAddress(0, 1), 0);
            assertEquals(0, empty.byteSize());
            e.free(empty);
        } finally {
            e.close();
        }
    }

    @Test
    void racingFreesOfOneBlockFreeItOnce() throws Exception {
        MallocEngine e = new MallocEngine(0, false);
        try {
            CyclicBarrier start = new CyclicBarrier(2);
            for (int round = 0; round < 200; round++) {
                MemorySegment s = e.segment(e.allocateAddress(64, 1), 64);
                AtomicInteger freed = new AtomicInteger();
                AtomicInteger doubleFrees = new AtomicInteger();
                Runnable free = () -> {
                    try {
                        start.await();
                        e.free(s);
                        freed.incrementAndGet();
                    } catch (IllegalStateException ex) {
                        doubleFrees.incrementAndGet();
                    } catch (Exception ex) {
                        throw new AssertionError(ex);
                    }
                };
                Thread t = Thread.ofPlatform().start(free);
                free.run();
                t.join();
                assertEquals(1, freed.get(), "round " + round);
                assertEquals(1, doubleFrees.get(), "round " + round);
            }
            assertEquals(0, e.stats().liveBytes());
        } finally {
            e.close();
        }
    }

    @Test
    void closeFreesEveryBlockOnceTheLastArenaCloses() {
        MallocEngine e = new MallocEngine(0, false);
        e.allocateAddress(64, 1);
        e.segment(e.allocateAddress(40 << 20, 1), 40 << 20);  // a scope of its own
        HeapArena arena = new HeapArena(e);
        MemorySegment kept = arena.allocate(128, 16);
        e.close();
        assertFalse(e.isOpen());
        assertEquals(3, e.liveBlockCount(), "the open arena keeps the heap's memory");
        kept.set(JAVA_LONG, 0, 7);                           // and its segment stays valid
        assertEquals("heap is closed", assertThrows(IllegalStateException.class, () -> arena.allocate(8, 8)).getMessage());
        arena.close();
        assertEquals(0, e.liveBlockCount());
        e.close();                                           // idempotent
    }

    @Test
    void theGlobalMallocHeapCannotBeClosed() {
        MallocEngine g = new MallocEngine(0, true);
        assertEquals("the global heap cannot be closed",
                assertThrows(UnsupportedOperationException.class, g::close).getMessage());
        assertTrue(g.isOpen());
    }
}
