package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** {@link MemoryRanges}: touching ranges asked about at once, only their own pages counted, and each alone once a part is gone. */
class MemoryRangesTest {

    private static final long PAGE = OsMemory.OS_PAGE;

    @Test
    void countsTheWrittenPagesOfTouchingRangesAndKeepsCountingWhenOneIsUnmapped() {
        assumeTrue(OsMemory.MAPS && OsMemory.residencyKnown(), "mincore is Linux's");
        long base = OsMemory.map(4 * PAGE);
        boolean middleUnmapped = false;
        try {
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base, (byte) 1);            // page 0 written
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base + 2 * PAGE, (byte) 1); // page 2 written
            MemoryRanges ranges = new MemoryRanges();
            for (int p = 3; p >= 0; p--) {                                      // added out of order
                ranges.add(base + p * PAGE, PAGE);
            }
            assertEquals(2 * PAGE, ranges.residentBytes(), "two of four touching pages written");

            OsMemory.unmap(base + PAGE, PAGE);                                   // a range given back meanwhile
            middleUnmapped = true;
            assertEquals(2 * PAGE, ranges.residentBytes(), "the run fails as a whole; each range alone still counts");
        } finally {
            if (middleUnmapped) {
                OsMemory.unmap(base, PAGE);
                OsMemory.unmap(base + 2 * PAGE, 2 * PAGE);
            } else {
                OsMemory.unmap(base, 4 * PAGE);
            }
        }
    }

    @Test
    void rangesCountOnlyTheirOwnPagesNotTheGapsBetweenThem() {
        assumeTrue(OsMemory.MAPS && OsMemory.residencyKnown(), "mincore is Linux's");
        long base = OsMemory.map(8 * PAGE);
        try {
            for (int p = 0; p < 8; p++) {
                OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base + p * PAGE, (byte) 1); // every page in RAM
            }
            MemoryRanges ranges = new MemoryRanges();
            ranges.add(base + 5 * PAGE, 2 * PAGE);
            ranges.add(base, PAGE);
            assertEquals(3 * PAGE, ranges.residentBytes(), "pages 0, 5 and 6: the written pages 1-4 and 7 are not theirs");
            OsMemory.release(base + 6 * PAGE, PAGE);
            assertEquals(2 * PAGE, ranges.residentBytes(), "a page released meanwhile no longer counts");
        } finally {
            OsMemory.unmap(base, 8 * PAGE);
        }
    }

    @Test
    void rangesAcrossAnUnmappedGapBothCount() {
        assumeTrue(OsMemory.MAPS && OsMemory.residencyKnown(), "mincore is Linux's");
        long base = OsMemory.map(3 * PAGE);
        OsMemory.unmap(base + PAGE, PAGE);                                   // two mappings, a hole between
        try {
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base, (byte) 1);
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base + 2 * PAGE, (byte) 1);
            MemoryRanges ranges = new MemoryRanges();
            ranges.add(base, PAGE);
            ranges.add(base + 2 * PAGE, PAGE);
            assertEquals(2 * PAGE, ranges.residentBytes());
        } finally {
            OsMemory.unmap(base, PAGE);
            OsMemory.unmap(base + 2 * PAGE, PAGE);
        }
    }

    @Test
    void aRangeLongerThanOneCallIsCountedWhole() {
        assumeTrue(OsMemory.MAPS && OsMemory.residencyKnown(), "mincore is Linux's");
        long pages = OsMemory.RESIDENCY_VECTOR_BYTES + 3;                    // one page more than a call holds, and two
        long base = OsMemory.map(pages * PAGE);
        try {
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base, (byte) 1);
            OsMemory.RAW.set(ValueLayout.JAVA_BYTE, base + (pages - 1) * PAGE, (byte) 1);
            MemoryRanges ranges = new MemoryRanges();
            ranges.add(base, pages * PAGE);
            assertEquals(2 * PAGE, ranges.residentBytes(), "its first and last pages");
        } finally {
            OsMemory.unmap(base, pages * PAGE);
        }
    }
}
