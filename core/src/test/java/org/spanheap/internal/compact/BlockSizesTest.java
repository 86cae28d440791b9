package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BlockSizesTest {

    /** The table lookup and the search agree with the definition: the smallest class that holds the size. */
    @ParameterizedTest
    @ValueSource(longs = {4096, 65536, 1 << 20, 1L << 30})
    void classOfIsTheSmallestClassThatHoldsTheSize(long pageSize) {
        BlockSizes b = new BlockSizes(pageSize);
        assertEquals(pageSize / 4, b.maxSmall());
        assertTrue(b.blockSize(b.count() - 1) >= b.maxSmall(), "the last class holds the largest small object");
        for (int c = 1; c < b.count(); c++) {
            assertTrue(b.blockSize(c) > b.blockSize(c - 1));
            assertTrue(b.blockSize(c) % (b.blockSize(c) <= 128 ? 8 : 16) == 0, "8-byte aligned blocks, 16 above 128 bytes");
            assertTrue(pageSize / b.blockSize(c) >= 4, "at least four blocks per page");
        }
        assertEquals(104, b.blockSize(b.classOf(100)), "below 128 bytes, at most 7 bytes are wasted");
        long step = Math.max(1, b.maxSmall() / 50_000);
        for (long size = 0; size <= b.maxSmall(); size += (size < 20_000 ? 1 : step)) {
            int c = b.classOf(size);
            assertTrue(b.blockSize(c) >= size, "class " + c + " holds " + size);
            assertTrue(c == 0 || b.blockSize(c - 1) < size, "class " + c + " is the smallest for " + size);
            if (size >= 128) {
                assertTrue(b.blockSize(c) <= size * 1.25 + 16, "waste at most 25% for " + size);
            }
        }
    }

    /** Blocks of a sixteenth of the page and more fill their pages: at most 16 bytes per block left at the tail. */
    @ParameterizedTest
    @ValueSource(longs = {4096, 65536, 1 << 20, 1L << 30})
    void largeClassesLeaveNoPageTail(long pageSize) {
        BlockSizes b = new BlockSizes(pageSize);
        int fitted = 0;
        for (int c = 0; c < b.count(); c++) {
            long size = b.blockSize(c);
            if (size > pageSize / 16) {
                long perPage = pageSize / size;
                assertTrue(pageSize - perPage * size <= 16 * perPage,
                        size + " B blocks leave " + (pageSize - perPage * size) + " B of a " + pageSize + " B page");
                fitted++;
            }
        }
        assertEquals(12, fitted, "one class per count of blocks per page, 15 down to 4");
        if (pageSize == 65536) {
            assertEquals(4368, b.blockSize(b.classOf(4097)));
            assertEquals(13104, b.blockSize(b.classOf(12289)));
            assertEquals(16384, b.blockSize(b.classOf(13105)));
        }
    }
}
