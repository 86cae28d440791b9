package org.spanheap;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link SpanHeap#newArena()}: a confined {@link Arena} backed by the heap. */
class HeapArenaTest {
    private SpanHeap heap;

    @BeforeEach
    void open() {
        heap = SpanHeap.create();
    }

    @AfterEach
    void close() {
        heap.close();
    }

    @Test
    void worksWithFfmAllocationApis() {
        try (Arena arena = heap.newArena()) {
            MemorySegment hello = arena.allocateFrom("hello");
            assertEquals("hello", hello.getString(0));
            assertSame(arena.scope(), hello.scope());

            MemorySegment ints = arena.allocate(JAVA_INT, 100);
            assertEquals(400, ints.byteSize());
            for (int i = 0; i < 100; i++) {
                assertEquals(0, ints.getAtIndex(JAVA_INT, i));
                ints.setAtIndex(JAVA_INT, i, i * i);
            }
            SegmentAllocator allocator = arena;
            MemorySegment longs = allocator.allocateFrom(JAVA_LONG, 1, 2, 3);
            assertArrayEquals(new long[] {1, 2, 3}, longs.toArray(JAVA_LONG));
            MemorySegment aligned = arena.allocate(100, 4096);
            assertEquals(0, aligned.address() % 4096);
            MemorySegment big = arena.allocate(3 << 20);
            big.set(JAVA_LONG, big.byteSize() - 8, 7);
            for (int i = 0; i < 100; i++) {
                assertEquals(i * i, ints.getAtIndex(JAVA_INT, i));
            }
        }
    }

    @Test
    void segmentsPassToDowncalls() throws Throwable {
        Linker linker = Linker.nativeLinker();
        MethodHandle strlen = linker.downcallHandle(linker.defaultLookup().find("strlen").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, ADDRESS));
        try (Arena arena = heap.newArena()) {
            assertEquals(11L, (long) strlen.invokeExact(arena.allocateFrom("hello world")));
        }
    }

    @Test
    void accessAfterCloseThrowsAndBlocksReturn() {
        MemorySegment s;
        MemorySegment big;
        try (Arena arena = heap.newArena()) {
            s = arena.allocate(64);
            big = arena.allocate(2 << 20);
            s.set(JAVA_LONG, 0, 42);
            assertTrue(heap.stats().liveBytes() >= (2 << 20) + 64);
        }
        assertFalse(s.scope().isAlive());
        assertThrows(IllegalStateException.class, () -> s.get(JAVA_LONG, 0));
        assertThrows(IllegalStateException.class, () -> big.get(JAVA_LONG, 0));
        assertEquals(0, heap.stats().liveBytes());
    }

    @Test
    void manyArenasRecycleBlocks() {
        for (int round = 0; round < 2000; round++) {
            try (Arena arena = heap.newArena()) {
                for (int i = 0; i < 20; i++) {
                    MemorySegment s = arena.allocate(8 + i * 8L);
                    s.set(JAVA_LONG, 0, round);
                }
            }
        }
        assertEquals(0, heap.stats().liveBytes());
    }

    @Test
    void reusedBlocksComeBackZeroed() {
        // Sizes on both sides of the fill/memset switch and of the critical-memset bound.
        long[] sizes = {8, 511, 512, 3000, 70_000, 1 << 20, (1 << 20) + 16};
        for (int round = 0; round < 3; round++) {
            try (Arena arena = heap.newArena()) {
                for (long size : sizes) {
                    MemorySegment s = arena.allocate(size);
                    assertTrue(SpanHeapTest.isZero(s), "round " + round + ", " + size + " bytes");
                    s.fill((byte) 0x5A);               // dirty it for the next round
                }
            }
        }
    }

    @Test
    void closeTwiceThrows() {
        Arena arena = heap.newArena();
        arena.close();
        assertThrows(IllegalStateException.class, arena::close);
        assertThrows(IllegalStateException.class, () -> arena.allocate(8));
    }

    @Test
    void otherThreadsAreRejected() throws Exception {
        try (Arena arena = heap.newArena()) {
            MemorySegment s = arena.allocate(64);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> CompletableFuture.runAsync(() -> arena.allocate(8)).get());
            assertInstanceOf(WrongThreadException.class, e.getCause());
            e = assertThrows(ExecutionException.class,
                    () -> CompletableFuture.runAsync(() -> s.get(JAVA_LONG, 0)).get());
            assertInstanceOf(WrongThreadException.class, e.getCause());
            e = assertThrows(ExecutionException.class,
                    () -> CompletableFuture.runAsync(arena::close).get());
            assertInstanceOf(WrongThreadException.class, e.getCause());
        }
    }

    @Test
    void heapFreeRejectsArenaSegments() {
        try (Arena arena = heap.newArena()) {
            MemorySegment s = arena.allocate(64);
            var e = assertThrows(IllegalArgumentException.class, () -> heap.free(s));
            assertTrue(e.getMessage().startsWith("segment was not allocated by this heap"), e.getMessage());
            s.set(JAVA_LONG, 0, 1);                  // still valid
        }
    }

    @Test
    void heapCloseWithOpenArenaKeepsArenaSegmentsValid() {
        SpanHeap h = SpanHeap.create();
        Arena arena = h.newArena();
        MemorySegment s = arena.allocateFrom("still here");
        MemorySegment direct = h.allocate(64);
        h.close();
        assertThrows(IllegalStateException.class, () -> direct.get(JAVA_LONG, 0));
        assertEquals("still here", s.getString(0));   // memory stays mapped until the arena closes
        assertThrows(IllegalStateException.class, () -> arena.allocate(8));
        arena.close();                                 // destroys the native heap
        assertThrows(IllegalStateException.class, () -> s.getString(0));
    }

    @Test
    void arenaOnVirtualThread() throws Exception {
        ConcurrentSpanHeapTest.runThreads(Thread.ofVirtual(), 4, id -> {
            try (Arena arena = heap.newArena()) {
                for (int i = 0; i < 100; i++) {
                    MemorySegment s = arena.allocateFrom("v" + i);
                    assertEquals("v" + i, s.getString(0));
                }
            }
        });
        assertEquals(0, heap.stats().liveBytes());
    }
}
