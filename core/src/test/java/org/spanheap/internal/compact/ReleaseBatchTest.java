package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class ReleaseBatchTest {

    private static final long PAGE = OsMemory.OS_PAGE;

    /**
     * Writes every page of a mapping, gives back every other run of {@code run} pages (more runs
     * than a batch holds) and checks: the runs read zero and are no longer resident, the pages
     * between them keep their bytes.
     */
    private static void releasesEveryOtherRun(boolean manyAtOnce) {
        assumeTrue(OsMemory.MAPS && OsMemory.residencyKnown(), "Linux's mmap, madvise and mincore");
        int runs = ReleaseBatch.CAPACITY * 2 + 5, run = 2;
        long bytes = (long) runs * 2 * run * PAGE;
        long base = OsMemory.map(bytes);
        boolean before = OsMemory.releasesManyAtOnce();
        try (Arena arena = Arena.ofConfined()) {
            OsMemory.releaseManyAtOnce(manyAtOnce);
            MemorySegment m = OsMemory.RAW.asSlice(base, bytes);
            for (long p = 0; p < bytes; p += PAGE) {
                m.set(ValueLayout.JAVA_LONG, p, p + 1);
            }
            ReleaseBatch batch = new ReleaseBatch(false);
            for (int r = 0; r < runs; r++) {
                batch.add(base + (long) r * 2 * run * PAGE, run * PAGE);
            }
            batch.flush();
            MemorySegment vector = arena.allocate(OsMemory.RESIDENCY_VECTOR_BYTES);
            for (int r = 0; r < runs; r++) {
                long released = (long) r * 2 * run * PAGE, kept = released + run * PAGE;
                assertEquals(0, OsMemory.residentBytes(base + released, run * PAGE, vector), "run " + r + " went back");
                for (long p = 0; p < run * PAGE; p += PAGE) {
                    assertEquals(0, m.get(ValueLayout.JAVA_LONG, released + p), "a released page reads zero");
                    assertEquals(kept + p + 1, m.get(ValueLayout.JAVA_LONG, kept + p), "a page between runs is kept");
                }
            }
        } finally {
            OsMemory.releaseManyAtOnce(before);
            OsMemory.unmap(base, bytes);
        }
    }

    @Test
    void releasesRunsManyAtOnceWhereTheOsTakesThem() {
        releasesEveryOtherRun(true); // falls back to one call per run where the OS refuses
    }

    @Test
    void releasesRunsOneByOne() {
        releasesEveryOtherRun(false);
    }

    @Test
    void lazyRunsKeepTheirNeighbours() {
        assumeTrue(OsMemory.MAPS, "Linux's mmap and madvise");
        int runs = ReleaseBatch.CAPACITY + 3;
        long bytes = (long) runs * 2 * PAGE;
        long base = OsMemory.map(bytes);
        try {
            MemorySegment m = OsMemory.RAW.asSlice(base, bytes);
            for (long p = 0; p < bytes; p += PAGE) {
                m.set(ValueLayout.JAVA_LONG, p, p + 1);
            }
            ReleaseBatch batch = new ReleaseBatch(true);
            for (int r = 0; r < runs; r++) {
                batch.add(base + (long) r * 2 * PAGE, PAGE);
            }
            batch.flush();
            for (int r = 0; r < runs; r++) {
                long lazy = (long) r * 2 * PAGE, kept = lazy + PAGE;
                long v = m.get(ValueLayout.JAVA_LONG, lazy);
                assertEquals(true, v == 0 || v == lazy + 1, "a lazy page reads its old bytes or zero");
                assertEquals(kept + 1, m.get(ValueLayout.JAVA_LONG, kept), "a page between runs is kept");
                m.set(ValueLayout.JAVA_LONG, lazy, 7); // written again: the page is the process's again
                assertEquals(7, m.get(ValueLayout.JAVA_LONG, lazy));
            }
        } finally {
            OsMemory.unmap(base, bytes);
        }
    }
}
