package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The runs of large segments: first fit, reuse of freed granules (dirty, so zeroed by the
 * heap), the bound on free resident granules, whole chunks given back first, granules given
 * back lazily and purged, and one empty segment kept. Driven directly (the caller's lock is
 * not needed on one thread).
 */
class LargeSegmentsTest {

    private static final long G = LargeSegments.GRANULE;
    private static final long CHUNK = LargeSegments.CHUNK_GRANULES * G;

    @Test
    void aFreedRunIsReusedFirstAndReportedDirty() {
        LargeSegments s = new LargeSegments();
        try {
            long a = s.take(100_000); // two granules
            assertEquals(0, a & 1, "a fresh segment reads as zero");
            long b = s.take(3 * G);
            assertEquals(a + 2 * G, b, "first fit, right after a");
            assertEquals(5 * G, s.usedBytes());
            assertEquals(5 * G, s.residentBytes());
            s.give(a, 100_000);
            long c = s.take(G);
            assertEquals(a | 1, c, "the freed run again, dirty");
            long d = s.take(G + 1);
            assertEquals((b + 3 * G), d, "a two-granule object does not fit the one-granule hole left");
            assertEquals(6 * G, s.usedBytes());
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void freeResidentGranulesAreGivenBackBeyondTheBoundWholeChunksFirst() {
        LargeSegments s = new LargeSegments();
        try {
            long[] runs = new long[32];
            for (int i = 0; i < runs.length; i++) {
                runs[i] = s.take(2 * G); // 4 MiB in all: two whole chunks
            }
            long kept = s.take(G); // stays used, after the two chunks
            for (long r : runs) {
                s.give(r, 2 * G);
            }
            assertEquals(G, s.usedBytes());
            assertEquals(65 * G, s.residentBytes(), "freed granules stay resident until given back");
            long given = s.giveBack(CHUNK / 2);
            assertEquals(2 * CHUNK, given, "both wholly free chunks, whole");
            assertEquals(G, s.residentBytes());
            assertEquals(2 * CHUNK, s.releasedBytes());
            long again = s.take(G);
            assertEquals(0, again & 1, "a run given back reads as zero");
            assertNotEquals(kept, again);
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void partialRunsAreGivenBackWhenNoWholeChunkIsFree() {
        LargeSegments s = new LargeSegments();
        try {
            long[] runs = new long[32];
            for (int i = 0; i < runs.length; i++) {
                runs[i] = s.take(G);
            }
            for (int i = 0; i < runs.length; i += 2) {
                s.give(runs[i], G); // every other granule of the first chunk: no whole chunk is free
            }
            assertEquals(32 * G, s.residentBytes());
            long given = s.giveBack(4 * G);
            assertEquals(12 * G, given, "down to the bound, granule runs");
            assertEquals(4 * G, s.residentBytes() - s.usedBytes());
            assertEquals(0, s.giveBack(4 * G), "nothing beyond the bound");
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void onlyGranulesFreeForTheMinimumAgeAreGivenBack() throws InterruptedException {
        LargeSegments s = new LargeSegments();
        try {
            long old = s.take(4 * G);
            long recent = s.take(4 * G);
            s.give(old, 4 * G);
            long between = System.nanoTime();
            Thread.sleep(2);
            s.give(recent, 4 * G);
            long now = System.nanoTime();
            assertEquals(4 * G, s.giveBack(0, now - between, now), "only the run freed before the cut");
            assertEquals(4 * G, s.residentBytes(), "the recently freed run stays resident");
            assertEquals(4 * G, s.giveBack(0, 0, now), "with no minimum age, the rest too");
            assertEquals(0, s.residentBytes());
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void granulesGivenBackByAgeGoLazilyAndAreTakenBeforeUntouchedOnes() {
        LargeSegments s = new LargeSegments();
        try {
            long a = s.take(4 * G);
            long b = s.take(4 * G); // stays used
            MemorySegment run = OsMemory.RAW.asSlice(a, 4 * G);
            run.fill((byte) 7);
            s.give(a, 4 * G);
            long now = System.nanoTime();
            assertEquals(4 * G, s.giveBack(0, 0, now), "given back: no longer committed");
            assertEquals(4 * G, s.residentBytes(), "only the used run is resident");
            assertEquals(4 * G, s.releasedBytes());
            if (!OsMemory.MAPS) {
                assertEquals(0, s.lazyBytes(), "without the Linux calls nothing is lazy");
                return;
            }
            assertEquals(4 * G, s.lazyBytes(), "MADV_FREE: held until the OS needs it");
            long again = s.take(2 * G);
            assertEquals(a | 1, again, "the lazy run before the untouched granules after b, and dirty");
            assertEquals(2 * G, s.lazyBytes());
            assertEquals(6 * G, s.residentBytes(), "committed again once taken");
            assertNotEquals(b, again & ~1L);
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void lazyGranulesArePurgedOnceOldEnoughAndByATrim() throws InterruptedException {
        LargeSegments s = new LargeSegments();
        try {
            long old = s.take(2 * G);
            long recent = s.take(2 * G);
            long kept = s.take(G);
            s.give(old, 2 * G);
            assertEquals(2 * G, s.giveBack(0, 0, System.nanoTime()));
            long cut = System.nanoTime();
            Thread.sleep(2);
            s.give(recent, 2 * G);
            assertEquals(2 * G, s.giveBack(0, 0, System.nanoTime()));
            if (!OsMemory.MAPS) {
                return; // released at once (nothing lazy): the rest is Linux's
            }
            assertEquals(4 * G, s.lazyBytes());
            assertTrue(s.purgeDue(cut + LargeSegments.LAZY_PURGE_NANOS), "the older run is due then");
            assertEquals(2 * G, s.purgeLazy(cut), "only the run given back before the cut");
            assertEquals(2 * G, s.lazyBytes());
            assertEquals(4 * G, s.releasedBytes(), "a purge releases nothing more than was counted");
            assertEquals(recent | 1, s.take(2 * G), "the lazy run before the purged one, dirty");
            s.give(recent, 2 * G);
            assertEquals(2 * G, s.giveBack(0, 0, System.nanoTime()));
            assertEquals(2 * G, s.lazyBytes());
            assertEquals(0, s.giveBack(0), "a trim finds no resident free granule...");
            assertEquals(0, s.lazyBytes(), "...and purges the lazy ones");
            assertEquals(old, s.take(2 * G), "both runs untouched again: first fit, reading as zero");
            assertEquals(recent, s.take(2 * G));
            assertEquals(kept + G, s.take(G), "the next granule after the kept one");
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void randomTakesGivesAndGiveBacksKeepTheCountersAndCleanRunsZero() {
        LargeSegments s = new LargeSegments();
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        java.util.ArrayList<long[]> live = new java.util.ArrayList<>(); // {address, size}
        long now = System.nanoTime();
        try {
            for (int step = 0; step < 4_000; step++) {
                int op = random.nextInt(10);
                now += random.nextLong(5_000_000); // up to 5 ms a step: ages cross the purge's
                if (op < 5 || live.isEmpty()) {
                    long size = 1 + random.nextLong(16 * G);
                    long run = s.take(size);
                    long at = run & ~1L;
                    if ((run & 1) == 0) { // clean: must read as zero
                        for (long off = 0; off < size; off += OsMemory.OS_PAGE) {
                            assertEquals(0, OsMemory.RAW.get(ValueLayout.JAVA_BYTE, at + off),
                                    "clean run at step " + step);
                        }
                    }
                    for (long off = 0; off < size; off += OsMemory.OS_PAGE) {
                        OsMemory.RAW.set(ValueLayout.JAVA_BYTE, at + off, (byte) 1); // dirty it
                    }
                    live.add(new long[] {at, size});
                } else if (op < 9) {
                    long[] o = live.remove(random.nextInt(live.size()));
                    s.give(o[0], o[1]);
                } else {
                    switch (random.nextInt(3)) {
                        case 0 -> s.giveBack(random.nextLong(8 * G), random.nextLong(10_000_000), now);
                        case 1 -> s.purgeLazy(now - LargeSegments.LAZY_PURGE_NANOS);
                        default -> s.giveBack(random.nextInt(4) == 0 ? 0 : random.nextLong(8 * G));
                    }
                }
                s.checkConsistent();
            }
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void oneEmptySegmentIsKeptASecondIsUnmapped() {
        LargeSegments s = new LargeSegments();
        try {
            long max = LargeSegments.MAX_OBJECT;
            int perSegment = (int) (LargeSegments.SEGMENT / max);
            long[] runs = new long[perSegment + 1];
            for (int i = 0; i < runs.length; i++) {
                runs[i] = s.take(max) & ~1L;
            }
            assertEquals(2 * LargeSegments.SEGMENT, s.mappedBytes(), "the last object opened a second segment");
            s.give(runs[perSegment], max); // the second segment empties: kept
            assertEquals(2 * LargeSegments.SEGMENT, s.mappedBytes());
            for (int i = 0; i < perSegment; i++) {
                s.give(runs[i], max);
            }
            assertEquals(LargeSegments.SEGMENT, s.mappedBytes(), "the first one emptied too: one is unmapped");
            assertEquals(0, s.usedBytes());
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void aRunOutsideEverySegmentIsABug() {
        LargeSegments s = new LargeSegments();
        try {
            long a = s.take(G);
            assertThrows(IllegalStateException.class, () -> s.give(a + LargeSegments.SEGMENT, G));
        } finally {
            s.unmapAll();
        }
    }

    @Test
    void aLargeObjectInADirtyRunIsZeroedOnAllocate() {
        try (org.spanheap.CompactingHeap heap = org.spanheap.CompactingHeap.create()) {
            long size = 200_000;
            long first = heap.allocate(size);
            MemorySegment s = heap.segment(first);
            for (long i = 0; i < size; i += 8) {
                s.set(ValueLayout.JAVA_LONG, i, -1L);
            }
            heap.free(first);
            heap.compact(); // the run is released: the next object of its size takes it
            long second = heap.allocate(size);
            MemorySegment t = heap.segment(second);
            assertEquals(s.address(), t.address(), "the freed run is reused");
            for (long i = 0; i < size; i += 8) {
                assertEquals(0L, t.get(ValueLayout.JAVA_LONG, i), "byte " + i);
            }
            heap.free(second);
            heap.compact();
            assertTrue(heap.stats().committedBytes() >= LargeSegments.heldSize(size),
                    "freed runs stay committed within the bound");
        }
    }
}
