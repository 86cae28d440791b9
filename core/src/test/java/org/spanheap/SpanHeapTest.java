package org.spanheap;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Single-thread behaviour of {@link SpanHeap}: sizes, alignment, zeroing, stats, errors, close. */
class SpanHeapTest {
    private SpanHeap heap;

    @BeforeEach
    void open() {
        heap = SpanHeap.builder().reserveBytes(1L << 32).build();
    }

    @AfterEach
    void close() {
        heap.close();
    }

    static void fill(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
    }

    static void check(MemorySegment s, long seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(JAVA_BYTE, i) != (byte) (seed * 31 + i)) {
                throw new AssertionError("content of " + s + " changed at byte " + i);
            }
        }
    }

    static boolean isZero(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }

    @ParameterizedTest
    @ValueSource(longs = {0, 1, 8, 15, 16, 17, 64, 100, 511, 512, 1000, 4096, 10_000, 100_000, 1 << 20,
            (1 << 20) + 1, 5 << 20})
    void allocateGivesZeroedAlignedNativeSegment(long size) {
        for (int round = 0; round < 3; round++) {   // the second round reuses dirty blocks
            MemorySegment s = heap.allocate(size);
            assertEquals(size, s.byteSize());
            assertTrue(s.isNative());
            assertEquals(0, s.address() % 16, "address " + s.address());
            assertTrue(isZero(s), "allocate must zero");
            fill(s, size);
            check(s, size);
            heap.free(s);
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 8, 16, 32, 64, 128, 256, 4096, 65536, 1 << 21, 1 << 22})
    void allocateHonoursAlignment(long alignment) {
        List<MemorySegment> all = new ArrayList<>();
        for (long size : new long[] {0, 1, 24, 64, 100, 4096, 70_000}) {
            MemorySegment s = heap.allocate(size, alignment);
            assertEquals(0, s.address() % alignment, "size " + size + " alignment " + alignment);
            assertEquals(size, s.byteSize());
            assertTrue(isZero(s));
            fill(s, size + alignment);
            all.add(s);
        }
        for (MemorySegment s : all) {
            check(s, s.byteSize() + alignment);
            heap.free(s);
        }
    }

    @Test
    void uninitializedAllocationWorks() {
        MemorySegment s = heap.allocateUninitialized(64);
        assertEquals(64, s.byteSize());
        fill(s, 7);
        check(s, 7);
        heap.free(s);
        MemorySegment t = heap.allocateUninitialized(4096, 4096);
        assertEquals(0, t.address() % 4096);
        heap.free(t);
    }

    @Test
    void usableSizeCoversTheRequest() {
        MemorySegment s = heap.allocate(100);
        assertTrue(heap.usableSize(s) >= 100);
        heap.free(s);
    }

    @Test
    void manyBlocksKeepTheirContents() {
        List<MemorySegment> all = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            MemorySegment s = heap.allocateUninitialized(1 + (i * 37) % 3000);
            fill(s, i);
            all.add(s);
        }
        for (int i = 0; i < all.size(); i += 2) {
            check(all.get(i), i);
            heap.free(all.get(i));
        }
        for (int i = 0; i < 10_000; i++) {
            MemorySegment s = heap.allocateUninitialized(64);
            fill(s, -i);
            check(s, -i);
            heap.free(s);
        }
        for (int i = 1; i < all.size(); i += 2) {
            check(all.get(i), i);
            heap.free(all.get(i));
        }
        assertEquals(0, heap.stats().liveBytes());
    }

    @Test
    void distinctLiveBlocksDoNotOverlap() {
        List<MemorySegment> all = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            all.add(heap.allocate(48));
        }
        all.sort((a, b) -> Long.compareUnsigned(a.address(), b.address()));
        for (int i = 1; i < all.size(); i++) {
            assertTrue(all.get(i).address() >= all.get(i - 1).address() + 48);
        }
        all.forEach(heap::free);
    }

    // ---- stats ------------------------------------------------------------------

    @Test
    @Tag("native-engine") // the native engine's size classes and thread caches
    void statsCountLiveAndCachedBlocks() {
        HeapStats before = heap.stats();
        assertEquals(0, before.liveBytes());
        assertTrue(before.reservedBytes() > 0);
        List<MemorySegment> all = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            all.add(heap.allocate(64));
        }
        HeapStats during = heap.stats();
        HeapStats.SizeClass c64 = during.sizeClasses().stream()
                .filter(c -> c.blockSize() >= 64).findFirst().orElseThrow();
        assertEquals(1000, c64.liveBlocks());
        assertEquals(1000L * c64.blockSize(), during.liveBytes());
        assertTrue(during.committedBytes() >= during.liveBytes());
        all.forEach(heap::free);
        HeapStats after = heap.stats();
        assertEquals(0, after.liveBytes());
        heap.flushThreadCache();
        HeapStats flushed = heap.stats();
        assertEquals(0, flushed.liveBytes());
        assertEquals(0, flushed.cachedBytes());
        assertThrows(UnsupportedOperationException.class, () -> flushed.sizeClasses().clear());
    }

    @Test
    void largeObjectsShowInStats() {
        MemorySegment big = heap.allocate(8 << 20);
        HeapStats s = heap.stats();
        assertTrue(s.largeCount() >= 1, s.toString());
        assertTrue(s.liveBytes() >= 8 << 20);
        heap.free(big);
        assertEquals(0, heap.stats().liveBytes());
    }

    // ---- bad input ---------------------------------------------------------------

    @Test
    void negativeSizeIsRejected() {
        var e = assertThrows(IllegalArgumentException.class, () -> heap.allocate(-1));
        assertEquals("size must be >= 0: -1", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> heap.allocateUninitialized(-5));
        assertEquals("size must be >= 0: -5", e.getMessage());
        try (Arena arena = heap.newArena()) {
            e = assertThrows(IllegalArgumentException.class, () -> arena.allocate(-2));
            assertEquals("size must be >= 0: -2", e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, -16, 3, 24, 100, Long.MIN_VALUE})
    void badAlignmentIsRejected(long alignment) {
        var e = assertThrows(IllegalArgumentException.class, () -> heap.allocate(16, alignment));
        assertEquals("alignment must be a power of two: " + alignment, e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, 1L << 50, (1L << 46) + 1})
    void impossibleSizeThrowsOutOfMemory(long size) {
        var e = assertThrows(SpanHeapOutOfMemoryError.class, () -> heap.allocate(size));
        assertTrue(e.getMessage().contains(Long.toString(size)), e.getMessage());
        // the heap stays usable
        heap.free(heap.allocate(64));
    }

    @Test
    void sizeBeyondTheReservationThrowsOutOfMemory() {
        try (SpanHeap small = SpanHeap.builder().reserveBytes(64L << 20).build()) {
            assertThrows(SpanHeapOutOfMemoryError.class, () -> small.allocate(1L << 44));
            small.free(small.allocate(100));
        }
    }

    @Test
    void alignmentBeyondTheSpanSizeWorks() {
        MemorySegment s = heap.allocate(100, 1L << 26);
        assertEquals(0, s.address() % (1L << 26));
        fill(s, 3);
        check(s, 3);
        heap.free(s);
    }

    @Test
    void freeNullThrowsNullPointerException() {
        assertThrows(NullPointerException.class, () -> heap.free(null));
    }

    @Test
    void doubleFreeIsDetected() {
        MemorySegment s = heap.allocate(64);
        heap.free(s);
        var e = assertThrows(IllegalStateException.class, () -> heap.free(s));
        assertTrue(e.getMessage().startsWith("double free: block 0x" + Long.toHexString(s.address())),
                e.getMessage());
        // still usable and not corrupted: the next two allocations are distinct
        MemorySegment a = heap.allocate(64);
        MemorySegment b = heap.allocate(64);
        assertNotEquals(a.address(), b.address());
        heap.free(a);
        heap.free(b);
    }

    @Test
    void doubleFreeOfLargeObjectIsDetected() {
        MemorySegment s = heap.allocate(4 << 20);
        heap.free(s);
        // The native core keeps the freed mapping for reuse and recognises it.
        var e = assertThrows(IllegalStateException.class, () -> heap.free(s));
        assertTrue(e.getMessage().startsWith("double free: block 0x" + Long.toHexString(s.address())),
                e.getMessage());
        heap.free(heap.allocate(4 << 20));
    }

    @Test
    void doubleFreeAfterCacheDrainIsDetected() {
        MemorySegment s = heap.allocate(64);
        heap.free(s);
        heap.flushThreadCache();                  // the block is now in a native free list
        assertThrows(IllegalStateException.class, () -> heap.free(s));
    }

    static void assertNotOwned(Runnable r, long address) {
        var e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().startsWith("segment was not allocated by this heap: 0x"
                + Long.toHexString(address)), e.getMessage());
    }

    @Test
    void freeOfInteriorSliceIsRejected() {
        MemorySegment s = heap.allocate(256);
        MemorySegment slice = s.asSlice(16);
        assertNotOwned(() -> heap.free(slice), slice.address());
        MemorySegment odd = s.asSlice(1);
        assertNotOwned(() -> heap.free(odd), odd.address());
        heap.free(s);                               // the block itself is still fine
    }

    @Test
    void freeOfInteriorSliceOfLargeObjectIsRejected() {
        MemorySegment s = heap.allocate(2 << 20);
        MemorySegment slice = s.asSlice(4096);
        assertNotOwned(() -> heap.free(slice), slice.address());
        heap.free(s);
    }

    @Test
    void freeOfForeignSegmentsIsRejected() {
        try (Arena confined = Arena.ofConfined(); SpanHeap other = SpanHeap.create()) {
            MemorySegment c = confined.allocate(64);
            assertNotOwned(() -> heap.free(c), c.address());
            MemorySegment o = other.allocate(64);
            assertNotOwned(() -> heap.free(o), o.address());
            other.free(o);
            MemorySegment onHeap = MemorySegment.ofArray(new long[8]);
            assertThrows(IllegalArgumentException.class, () -> heap.free(onHeap));
            assertNotOwned(() -> heap.free(MemorySegment.NULL), 0);
            try (Arena arena = heap.newArena()) {
                MemorySegment a = arena.allocate(64);
                assertNotOwned(() -> heap.free(a), a.address());
            }
        }
    }

    // ---- byte limit ----------------------------------------------------------------

    @Test
    void byteLimitThrowsAndHeapStaysUsable() {
        try (SpanHeap limited = SpanHeap.builder().byteLimit(16L << 20).build()) {
            List<MemorySegment> all = new ArrayList<>();
            SpanHeapOutOfMemoryError e = null;
            for (int i = 0; i < 100 && e == null; i++) {
                try {
                    all.add(limited.allocate(1 << 20));
                } catch (SpanHeapOutOfMemoryError oom) {
                    e = oom;
                }
            }
            assertTrue(e != null, "16 MiB limit never reached with " + all.size() + " MiB");
            assertTrue(e.isByteLimit(), e.getMessage());
            assertTrue(e.getMessage().contains("byte limit"), e.getMessage());
            assertTrue(all.size() >= 8 && all.size() <= 16, "allocated " + all.size() + " MiB");
            all.forEach(limited::free);
            all.clear();
            for (int i = 0; i < 8; i++) {
                all.add(limited.allocate(1 << 20));
            }
            all.forEach(limited::free);
            assertEquals(16L << 20, limited.stats().limitBytes());
        }
    }

    @Test
    void byteLimitWithSmallBlocksThenContinue() {
        try (SpanHeap limited = SpanHeap.builder().byteLimit(8L << 20).build()) {
            List<MemorySegment> all = new ArrayList<>();
            assertThrows(SpanHeapOutOfMemoryError.class, () -> {
                for (int i = 0; i < 10_000_000; i++) {
                    all.add(limited.allocateUninitialized(1000));
                }
            });
            assertTrue(all.size() > 1000);
            all.forEach(limited::free);
            all.clear();
            for (int i = 0; i < 1000; i++) {
                all.add(limited.allocate(1000));
            }
            all.forEach(limited::free);
            assertEquals(0, limited.stats().liveBytes());
        }
    }

    // ---- close ---------------------------------------------------------------------

    @Test
    void useAfterCloseThrows() {
        SpanHeap h = SpanHeap.create();
        MemorySegment small = h.allocate(64);
        MemorySegment large = h.allocate(4 << 20);
        small.set(JAVA_LONG, 0, 1);
        h.close();
        assertFalse(h.isOpen());
        // The fast paths report the closed scope in the JDK's words; the slow paths say "heap is closed".
        assertThrows(IllegalStateException.class, () -> h.allocate(64));
        assertEquals("heap is closed", assertThrows(IllegalStateException.class, () -> h.allocate(4 << 20)).getMessage());
        assertThrows(IllegalStateException.class, () -> h.allocate(64, 4096));
        assertThrows(IllegalStateException.class, () -> small.get(JAVA_LONG, 0));
        assertThrows(IllegalStateException.class, () -> large.set(JAVA_LONG, 0, 1));
        assertThrows(IllegalStateException.class, () -> h.free(small));
        assertThrows(IllegalStateException.class, () -> h.free(large));
        assertThrows(IllegalStateException.class, h::stats);
        assertThrows(IllegalStateException.class, h::newArena);
        assertThrows(IllegalStateException.class, h::flushThreadCache);
        h.close();                                   // idempotent
    }

    @Test
    void globalHeapCannotBeClosed() {
        SpanHeap g = SpanHeap.global();
        assertSame(g, SpanHeap.global());
        MemorySegment s = g.allocate(32);
        g.free(s);
        assertThrows(UnsupportedOperationException.class, g::close);
        assertTrue(g.isOpen());
    }

    @Test
    void builderRejectsBadSettings() {
        assertEquals("reserve bytes must be >= 0: -1",
                assertThrows(IllegalArgumentException.class, () -> SpanHeap.builder().reserveBytes(-1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SpanHeap.builder().byteLimit(-1));
        assertThrows(IllegalArgumentException.class, () -> SpanHeap.builder().reuseThresholdPercent(101));
        assertThrows(IllegalArgumentException.class, () -> SpanHeap.builder().threadCacheBlocks(-1));
        assertThrows(IllegalArgumentException.class, () -> SpanHeap.builder().threadCacheBytesPerClass(-1));
    }

    /**
     * Small magazines, so every allocate/free crosses the EMPTY and FULL sentinels of the
     * thread cache's stacks (see ThreadCache) many times: blocks stay distinct, double frees
     * are caught wherever the block sits (top of the stack, below it, moved to the overflow
     * store), and the cached counts are exact.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4})
    void smallMagazinesCrossTheirBoundaries(int capacity) {
        try (SpanHeap small = SpanHeap.builder().reserveBytes(1L << 32).threadCacheBlocks(capacity).build()) {
            for (long size : new long[] {0, 16, 64, 1000}) {
                for (int round = 0; round < 3; round++) {
                    List<MemorySegment> all = new ArrayList<>();
                    for (int i = 0; i < 4 * capacity + 1; i++) {
                        MemorySegment s = small.allocate(size);
                        assertTrue(isZero(s));
                        fill(s, i);
                        all.add(s);
                    }
                    assertEquals(all.size(), all.stream().mapToLong(MemorySegment::address).distinct().count());
                    long block = small.usableSize(all.get(0));
                    for (int i = 0; i < all.size(); i++) {
                        check(all.get(i), i);
                        small.free(all.get(i));
                        MemorySegment top = all.get(i);
                        assertThrows(IllegalStateException.class, () -> small.free(top));
                        MemorySegment first = all.get(0);
                        assertThrows(IllegalStateException.class, () -> small.free(first));
                    }
                    HeapStats st = small.stats();
                    assertEquals(0, st.liveBytes());
                    // magazine and overflow hold up to 64 KiB of the class: every block freed,
                    // plus what the last refill brought and nobody took (less than a magazine);
                    // the malloc engine caches nothing
                    long freed = small.engine() == Engine.NATIVE ? all.size() * block : 0;
                    long extra = small.engine() == Engine.NATIVE ? capacity * block : 1;
                    assertTrue(st.cachedBytes() >= freed && st.cachedBytes() < freed + extra, st::toString);
                }
                small.flushThreadCache();
                assertEquals(0, small.stats().cachedBytes());
            }
            small.flushThreadCache();
            assertEquals(0, small.stats().cachedBytes());
        }
    }

    /**
     * With the default budget (64 KiB per class) a 64 KiB block fits once: the thread keeps
     * the last one it freed, and allocating that size again takes it back (no native call).
     */
    @Test
    @Tag("native-engine") // the native engine's thread caches
    void aClassAboveHalfTheBudgetKeepsOneBlock() {
        MemorySegment first = heap.allocate(64 << 10);
        long address = first.address();
        heap.free(first);
        assertEquals(64 << 10, heap.stats().cachedBytes(), heap.stats()::toString);
        MemorySegment again = heap.allocate(64 << 10);
        assertEquals(address, again.address(), "the cached block comes back");
        assertTrue(isZero(again));
        MemorySegment second = heap.allocate(64 << 10);
        heap.free(again);
        heap.free(second); // the magazine is full: the older block goes to the heap's depot
        assertEquals(2 * (64 << 10), heap.stats().cachedBytes());
        assertThrows(IllegalStateException.class, () -> heap.free(again));
        assertThrows(IllegalStateException.class, () -> heap.free(second));
        heap.flushThreadCache();
        assertEquals(0, heap.stats().cachedBytes());
        assertEquals(0, heap.stats().liveBytes());
    }

    /**
     * A full magazine's older half goes to the heap's depot, not to the native heap, and another
     * thread whose magazine is empty takes it from there: the blocks one thread freed are the
     * next ones another allocates. Double frees of depot blocks are caught, the stats count
     * them as cached, the depot's budget bounds them, and a flush gives them all back.
     */
    @Test
    @Tag("native-engine") // the native engine's thread caches and depot
    void overflowedMagazinesPassThroughTheDepotToOtherThreads() throws InterruptedException {
        int capacity = 8;
        long size = 64;
        // budget: 8 blocks of 64 B per magazine, so the depot holds at most 4 x 512 B = 32 blocks
        try (SpanHeap small = SpanHeap.builder().reserveBytes(1L << 32).threadCacheBlocks(capacity)
                .threadCacheBytesPerClass(capacity * size).build()) {
            List<MemorySegment> freed = new ArrayList<>();
            Thread freer = new Thread(() -> {
                List<MemorySegment> all = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    all.add(small.allocateUninitialized(size));
                }
                for (MemorySegment s : all) {
                    small.free(s);
                }
                freed.addAll(all);
            });
            freer.start();
            freer.join();
            HeapStats.SizeClass c = small.stats().sizeClasses().get(3); // 64-byte blocks
            assertEquals(64, c.blockSize());
            assertEquals(0, c.liveBlocks());
            // the dead freer's magazine went back to the native heap when stats() drained it;
            // the depot keeps at most 32 blocks (its budget) of the 100
            assertTrue(c.cachedBlocks() > 0 && c.cachedBlocks() <= 32, c.toString());
            long inDepot = c.cachedBlocks();
            MemorySegment depotBlock = freed.get(0); // the oldest: deposited first
            assertThrows(IllegalStateException.class, () -> small.free(depotBlock));

            java.util.Set<Long> freedAddresses = new java.util.HashSet<>();
            freed.forEach(s -> freedAddresses.add(s.address()));
            List<MemorySegment> taken = new ArrayList<>();
            for (int i = 0; i < inDepot; i++) {
                taken.add(small.allocateUninitialized(size));
            }
            long reused = taken.stream().filter(s -> freedAddresses.contains(s.address())).count();
            assertEquals(inDepot, reused, "the depot's blocks come first");
            assertEquals(inDepot, taken.stream().mapToLong(MemorySegment::address).distinct().count());
            for (MemorySegment s : taken) {
                small.free(s);
            }
            small.flushThreadCache();
            assertEquals(0, small.stats().cachedBytes(), small.stats()::toString);
            assertEquals(0, small.stats().liveBytes());
        }
    }

    /**
     * Blocks beyond a thread's magazine stay in its own overflow store (the default budget of
     * 64 KiB per class holds 1024 blocks of 64 B), are counted as cached, and return to the
     * native heap when the thread dies: nothing is lost and nothing counted twice.
     */
    @Test
    @Tag("native-engine") // the native engine's thread caches
    void aDeadThreadsOverflowGoesBackToTheHeap() throws InterruptedException {
        long[] cachedWhileAlive = new long[1];
        Thread t = new Thread(() -> {
            List<MemorySegment> all = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                all.add(heap.allocateUninitialized(64));
            }
            for (MemorySegment s : all) {
                heap.free(s);
            }
            cachedWhileAlive[0] = heap.stats().sizeClasses().get(3).cachedBlocks();
        });
        t.start();
        t.join();
        // 500 freed: the magazine's and the overflow's, none in the shared depot; plus what
        // the last refill brought and nobody took
        assertTrue(cachedWhileAlive[0] >= 500 && cachedWhileAlive[0] < 500 + SpanHeap.DEFAULT_CACHE_BLOCKS,
                "cached " + cachedWhileAlive[0]);
        HeapStats.SizeClass c = heap.stats().sizeClasses().get(3); // drains the dead thread's cache
        assertEquals(0, c.cachedBlocks(), c::toString);
        assertEquals(0, c.liveBlocks(), c::toString);
        assertEquals(0, heap.stats().liveBytes());
    }

    /**
     * A new platform thread adopts a dead thread's cache, blocks and all: its first
     * allocations are the blocks the dead thread freed, newest first, without a trip through
     * the native heap; a block freed by the dead thread is still known as free; nothing is
     * lost or counted twice.
     */
    @Test
    @Tag("native-engine") // the native engine's thread caches
    void aNewThreadAdoptsADeadThreadsCache() throws InterruptedException {
        List<MemorySegment> freedByFirst = new ArrayList<>();
        Thread first = new Thread(() -> {
            for (int i = 0; i < 40; i++) {
                freedByFirst.add(heap.allocateUninitialized(64));
            }
            for (MemorySegment s : freedByFirst) {
                heap.free(s);
            }
        });
        first.start();
        first.join();

        long[] taken = new long[40];
        Throwable[] failure = new Throwable[1];
        Thread second = new Thread(() -> {
            try {
                MemorySegment again = freedByFirst.get(5);
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> heap.free(again));
                assertTrue(e.getMessage().contains("double free"), e.getMessage());
                List<MemorySegment> mine = new ArrayList<>();
                for (int i = 0; i < taken.length; i++) {
                    mine.add(heap.allocateUninitialized(64));
                    taken[i] = mine.get(i).address();
                }
                for (MemorySegment s : mine) {
                    heap.free(s);
                }
            } catch (Throwable t) {
                failure[0] = t;
            }
        });
        second.start();
        second.join();
        if (failure[0] != null) {
            throw new AssertionError(failure[0]);
        }
        for (int i = 0; i < taken.length; i++) {
            assertEquals(freedByFirst.get(taken.length - 1 - i).address(), taken[i],
                    "allocation " + i + " of the adopting thread: the dead thread's blocks, newest first");
        }
        HeapStats.SizeClass c = heap.stats().sizeClasses().get(3); // drains the second thread's cache
        assertEquals(0, c.cachedBlocks(), c::toString);
        assertEquals(0, c.liveBlocks(), c::toString);
        assertEquals(0, heap.stats().liveBytes());
    }

    /** A dead thread's cache is adopted by one new thread only, and a block it hands out is not handed out again. */
    @Test
    @Tag("native-engine") // the native engine's thread caches
    void onlyOneNewThreadAdoptsADeadCache() throws InterruptedException {
        MemorySegment[] block = new MemorySegment[1];
        Thread first = new Thread(() -> {
            block[0] = heap.allocateUninitialized(64);
            heap.free(block[0]);
        });
        first.start();
        first.join();
        long[] got = new long[2];
        for (int k = 0; k < 2; k++) {
            int index = k;
            Thread next = new Thread(() -> {
                MemorySegment s = heap.allocateUninitialized(64);
                got[index] = s.address();
                // keeps it: the cache that dies with this thread must not hand it out again
            });
            next.start();
            next.join();
        }
        assertEquals(block[0].address(), got[0], "the adopting thread gets the dead thread's block");
        assertNotEquals(got[0], got[1], "a block handed out once is not handed out again");
        assertEquals(2 * 64, heap.stats().liveBytes());
    }

    @Test
    void heapWithoutThreadCachesWorks() {
        try (SpanHeap direct = SpanHeap.builder().threadCacheBlocks(0).build()) {
            List<MemorySegment> all = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                MemorySegment s = direct.allocate(i % 500);
                fill(s, i);
                all.add(s);
            }
            for (int i = 0; i < all.size(); i++) {
                check(all.get(i), i);
                direct.free(all.get(i));
            }
            assertThrows(IllegalStateException.class, () -> direct.free(all.get(3)));
            for (long size : new long[] {0, 64, 100_000, 1 << 20}) {
                MemorySegment s = direct.allocate(size);
                assertTrue(isZero(s));
                direct.free(s);
            }
            assertThrows(IllegalArgumentException.class, () -> direct.allocate(-1));
            assertEquals(0, direct.stats().cachedBytes());
            assertEquals(0, direct.stats().liveBytes());
        }
    }

    /**
     * A freed large block is kept with its scope open and handed out again to the next large
     * allocation it fits (no handshake), counted as cached meanwhile; trim() lets it go and
     * closes its scope.
     */
    @Test
    @Tag("native-engine") // the malloc engine keeps no large blocks
    void freedLargeBlockIsKeptCountedAsCachedAndHandedOutAgain() {
        long size = 4L << 20;
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment s = heap.allocateUninitialized(size);
            s.set(JAVA_LONG, 0, 5);
            assertEquals(1, heap.stats().largeCount());
            heap.free(s);
            HeapStats kept = heap.stats();
            assertEquals(0, kept.largeCount());
            assertEquals(0, kept.largeBytes());
            assertTrue(kept.cachedBytes() >= size, kept.toString());
            assertTrue(kept.liveBytes() < size, kept.toString());
            MemorySegment t = heap.allocate(size - 4096);   // fits the kept block, not twice smaller
            assertEquals(s.address(), t.address());
            assertSame(s.scope(), t.scope());
            assertEquals(0, t.get(JAVA_LONG, 0), "allocate zeroes a kept block too");
            assertEquals(1, heap.stats().largeCount());
            heap.free(t);
            MemorySegment half = heap.allocate(size / 2 - 4096); // less than half of it: not the kept block
            assertNotEquals(s.address(), half.address());
            heap.free(half);
            heap.trim();
            assertTrue(heap.stats().cachedBytes() < size / 2, heap.stats().toString());
            assertThrows(IllegalStateException.class, () -> t.get(JAVA_LONG, 0));
        }
    }

    /** Eight blocks are kept at most; the ninth freed one has its scope closed at its free. */
    @Test
    @Tag("native-engine")
    void atMostEightLargeBlocksAreKept() {
        long size = 2L << 20;
        try (SpanHeap heap = SpanHeap.create()) {
            List<MemorySegment> blocks = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                blocks.add(heap.allocateUninitialized(size));
            }
            for (MemorySegment b : blocks) {
                heap.free(b);
            }
            for (int i = 0; i < 8; i++) {
                blocks.get(i).get(JAVA_LONG, 0);     // kept: scope open
            }
            assertThrows(IllegalStateException.class, () -> blocks.get(8).get(JAVA_LONG, 0));
            var e = assertThrows(IllegalStateException.class, () -> heap.free(blocks.get(0)));
            assertTrue(e.getMessage().startsWith("double free"), e.getMessage());
        }
    }

    /** Kept blocks still count against the byte limit; an allocation refused by it lets them go, then succeeds. */
    @Test
    @Tag("native-engine")
    void keptLargeBlocksLeaveWhenTheByteLimitRefusesAnAllocation() {
        long mib = 1L << 20;
        try (SpanHeap heap = SpanHeap.builder().reserveBytes(1L << 32).byteLimit(8 * mib).build()) {
            MemorySegment kept = heap.allocateUninitialized(6 * mib);
            heap.free(kept);
            MemorySegment bigger = heap.allocate(7 * mib);  // does not fit the kept one; 6 + 7 > 8
            bigger.set(JAVA_LONG, 7 * mib - 8, 1);
            assertThrows(IllegalStateException.class, () -> kept.get(JAVA_LONG, 0));
            heap.free(bigger);
        }
    }

    /**
     * A block mapped for itself (a large object: its free may unmap it) carries a scope of
     * its own: a use after free throws instead of faulting the JVM (it once crashed it with
     * SIGSEGV), and so does a use after the heap's close. 2 MiB: a block the heap keeps, scope
     * open, to hand out again (a use after free is then not detected) until {@code trim()}
     * lets it go, and a mapping the native core may keep for reuse; 40 MiB: one it never
     * keeps.
     */
    @ParameterizedTest
    @ValueSource(longs = {2L << 20, 40L << 20})
    void individuallyMappedBlockUsedAfterFreeThrows(long size) {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment canary = heap.allocate(64);
            canary.set(JAVA_LONG, 0, 42);
            MemorySegment s = heap.allocateUninitialized(size);
            s.set(JAVA_LONG, size - 8, 7);
            assertEquals(7, s.get(JAVA_LONG, size - 8));
            assertTrue(heap.usableSize(s) >= size);
            heap.free(s);
            heap.trim();
            assertThrows(IllegalStateException.class, () -> s.get(JAVA_LONG, 0));
            assertThrows(IllegalStateException.class, () -> s.set(JAVA_LONG, size - 8, 1));
            var e = assertThrows(IllegalStateException.class, () -> heap.free(s));
            assertTrue(e.getMessage().startsWith("double free"), e.getMessage());
            MemorySegment t = heap.allocate(size);
            assertThrows(IllegalArgumentException.class, () -> heap.free(t.asSlice(4096)), "interior");
            assertThrows(IllegalArgumentException.class, () -> heap.free(MemorySegment.ofAddress(t.address())
                    .reinterpret(size)), "same address, not the heap's segment");
            assertEquals(0, t.get(JAVA_LONG, size - 8), "zeroed");
            heap.free(t);
            assertEquals(42, canary.get(JAVA_LONG, 0), "nothing else touched");
            heap.free(canary);
        }
        SpanHeap heap = SpanHeap.create();
        MemorySegment u = heap.allocate(size);
        heap.close();
        assertThrows(IllegalStateException.class, () -> u.get(JAVA_BYTE, 0), "after close");
    }
}
