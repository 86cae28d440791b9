package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** {@link MemoryRanges}: touching ranges asked about at once, and each alone once a part is gone. */
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
}
