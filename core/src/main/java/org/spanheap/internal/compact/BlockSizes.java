package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * The block sizes of a compacting heap's size classes: multiples of 8 from 16
 * to 128 (a 100-byte value, a cache's typical small entry, takes 104 bytes, not
 * 112), then four classes per doubling up to a sixteenth of the page size, then
 * one class per number of blocks a page holds, from 15 down to 4: the largest
 * multiple of 16 that fits that many times in a page (for 64 KiB pages 4368,
 * 4672, 5040, ..., 10912, 13104, 16384). Internal fragmentation is at most
 * 25% (about 10% on average for uniformly random sizes) and no page of the
 * large classes loses more than 16 bytes per block to its tail; with four
 * classes per doubling there too, a page of 14 KiB blocks left 8 KiB unused
 * and the classes of 5, 6, 10 and 12 KiB 4 KiB each (docs/compacting-heap.md,
 * "Blocks that fit their pages"). Objects over a quarter of the page are not in
 * a class: the heap maps them one by one.
 */
final class BlockSizes {

    private final int[] blockSizes;
    private final long maxSmall;
    /** Classes of 16 to 128 bytes, one per multiple of 8. */
    private static final int SMALL_CLASSES = 15;
    /** Class of every size rounded up to 8, up to 16 KiB: one load instead of a search on the allocation path. */
    private final byte[] classBy8;

    BlockSizes(long pageSize) {
        this.maxSmall = pageSize / 4;
        int[] tmp = new int[128];
        int n = 0;
        for (int s = 16; s <= 128; s += 8) {
            tmp[n++] = s;
        }
        long fitted = pageSize / 16; // from here on, classes fit a whole number of blocks in a page
        for (long base = 128; base < fitted; base <<= 1) {
            for (int q = 1; q <= 4; q++) {
                tmp[n++] = (int) (base + base * q / 4);
            }
        }
        for (int perPage = 15; perPage >= 4; perPage--) {
            long size = pageSize / perPage & ~15L;
            if (size > tmp[n - 1]) {
                tmp[n++] = (int) size;
            }
        }
        blockSizes = Arrays.copyOf(tmp, n);
        classBy8 = new byte[(int) Math.min(maxSmall, TABLE_LIMIT) / 8 + 1];
        for (int i = 0; i < classBy8.length; i++) {
            classBy8[i] = (byte) search(i * 8L);
        }
    }

    private static final long TABLE_LIMIT = 16 * 1024;

    int count() {
        return blockSizes.length;
    }

    int blockSize(int cls) {
        return blockSizes[cls];
    }

    /** Largest size served from a size class; larger objects are mapped one by one. */
    long maxSmall() {
        return maxSmall;
    }

    /** Smallest class whose blocks hold {@code size} bytes ({@code 0 <= size <= maxSmall()}). */
    int classOf(long size) {
        if (size <= TABLE_LIMIT) {
            return classBy8[(int) ((size + 7) >>> 3)];
        }
        return search(size);
    }

    private int search(long size) {
        if (size <= 128) {
            return size <= 16 ? 0 : (int) ((size - 1) >>> 3) - 1;
        }
        int lo = SMALL_CLASSES, hi = blockSizes.length - 1; // binary search over the geometric part
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (blockSizes[mid] >= size) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }
}
