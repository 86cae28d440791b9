package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** {@link Page#slotOf} ({@link SizeClassPages#slotAt}) divides by the block size through a multiplication: exact for every class and page size. */
class PageSlotTest {

    @Test
    void everyAddressOfASlotMapsBackToItInEveryClass() {
        for (long pageSize : new long[] {4096, 64 * 1024, 1 << 20}) {
            BlockSizes sizes = new BlockSizes(pageSize);
            for (int cls = 0; cls < sizes.count(); cls++) {
                int block = sizes.blockSize(cls);
                Page p = new Page(0x7f00_0000_0000L, new SizeClassPages(cls, cls, block, pageSize, new PageIds()));
                for (int slot = 0; slot < p.sizeClass.blocksPerPage; slot++) {
                    long a = p.addressOf(slot);
                    assertEquals(slot, p.slotOf(a), "first byte, block " + block);
                    assertEquals(slot, p.slotOf(a + block - 1), "last byte, block " + block);
                }
            }
        }
    }

    @Test
    void anyBlockSizeDividesExactlyUpToAGibibytePage() {
        for (int block : new int[] {3, 24, 48, 80, 112, 1_000, 12_345, 65_535}) {
            SizeClassPages c = new SizeClassPages(0, 0, block, 1 << 30, new PageIds());
            for (long offset = 0; offset < (1L << 30); offset += 104_729) { // a prime step through the page
                assertEquals(offset / block, c.slotAt(offset), "offset " + offset + ", block " + block);
                assertEquals((offset + block - 1) / block, c.slotAt(offset + block - 1), "offset " + offset + ", block " + block);
            }
            long last = (1L << 30) - 1;
            assertEquals(last / block, c.slotAt(last), "last offset, block " + block);
        }
    }
}
