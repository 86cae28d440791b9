package org.spanheap.internal.compact;

/**
 * The block sizes of a compacting heap: multiples of 16 up to 128, then four
 * classes per doubling up to the page size (internal fragmentation at most
 * 25% and on average about 10% for uniformly random sizes). The last class is
 * one block per page; such pages are never not-full, so they never compact.
 */
public final class SizeClasses {

    private final int[] blockSizes;
    private final long pageSize;

    public SizeClasses(long pageSize) {
        this.pageSize = pageSize;
        int[] tmp = new int[128];
        int n = 0;
        for (int s = 16; s <= 128; s += 16) {
            tmp[n++] = s;
        }
        for (long base = 128; base < pageSize; base <<= 1) {
            for (int q = 1; q <= 4; q++) {
                tmp[n++] = (int) (base + base * q / 4);
            }
        }
        blockSizes = java.util.Arrays.copyOf(tmp, n);
    }

    public int count() {
        return blockSizes.length;
    }

    public int blockSize(int cls) {
        return blockSizes[cls];
    }

    public long maxSize() {
        return pageSize;
    }

    /** Smallest class whose blocks hold {@code size} bytes ({@code 0 <= size <= maxSize()}). */
    public int classOf(long size) {
        if (size <= 128) {
            return size <= 16 ? 0 : (int) ((size - 1) >>> 4);
        }
        // binary search over the geometric part
        int lo = 8, hi = blockSizes.length - 1;
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
