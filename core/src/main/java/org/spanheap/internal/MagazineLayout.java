package org.spanheap.internal;

/**
 * Where each size class's magazine sits in a {@link ThreadCache}'s array, for one heap's
 * cache configuration, and the array a new cache starts from.
 *
 * <p>Magazine capacity per class: {@code min(cacheBlocks, cacheBytesPerClass / blockSize)}. A
 * class that would hold no block is not cached, nor is any class after it, so the
 * cached classes are a prefix {@code [0, cachedClassCount)} (classes grow with their index).
 * The array holds class records, then per cached class EMPTY, the slots, FULL; uncached
 * classes get no slots ({@code limit == base}). With nothing cached, class 0 still gets a
 * record and an empty zero-slot stack, so the allocation fast path (sizes up to
 * {@code maxCachedSize = 0} map to class 0) finds EMPTY and goes to the slow path.
 *
 * <p>A one-block magazine (the classes above half the per-class budget: 40 to 64 KiB by
 * default) keeps the last freed block, so a thread that allocates and frees a 64 KiB buffer
 * in turn (an I/O buffer) makes no native call. Before, such classes were not cached: a
 * Netty buffer of 64 KiB took 48 ns to allocate, write and release, now 35
 * (docs/netty.md).
 */
final class MagazineLayout {
    /** Classes {@code [0, cachedClassCount)} have magazines. */
    final int cachedClassCount;
    /** The largest block size among the cached classes; 0 when none is cached. */
    final long maxCachedSize;
    /** Per class: index in a cache's array of the first magazine slot. */
    final int[] base;
    /** Per class: one past the last slot ({@code limit == base}: uncached class). */
    final int[] limit;
    /** A new cache's array: class records and empty magazines with their sentinels. */
    final long[] template;
    /**
     * Per cached class: blocks a thread may keep beyond its magazine, in its private overflow
     * store ({@code ThreadCache.overflow}), so that magazine and overflow together hold up to the
     * per-class byte budget: 0 for the classes whose magazine is already at the budget.
     */
    final int[] overflowCapacity;

    MagazineLayout(SizeClassTable classes, int cacheBlocks, long cacheBytesPerClass) {
        int n = classes.count;
        int cached = 0;
        while (cached < n && capacity(classes, cached, cacheBlocks, cacheBytesPerClass) >= 1) {
            cached++;
        }
        cachedClassCount = cached;
        int records = Math.max(cached, 1);
        base = new int[n];
        limit = new int[n];
        int index = ThreadCache.CLASS_RECORDS + ThreadCache.CLASS_RECORD * records;
        for (int c = 0; c < n; c++) {
            if (c < records) {
                index++;                           // EMPTY sentinel
                base[c] = index;
                index += c < cached ? (int) capacity(classes, c, cacheBlocks, cacheBytesPerClass) : 0;
                limit[c] = index;
                index++;                           // FULL sentinel
            } else {
                base[c] = index;
                limit[c] = index;
            }
        }
        template = ThreadCache.template(records, base, limit, classes.payloadOffset,
                classes.payloadBytes, classes.divisor, index);
        int[] magazine = new int[cached];
        for (int c = 0; c < cached; c++) {
            magazine[c] = limit[c] - base[c];
        }
        overflowCapacity = MagazineDepot.capacities(cached, classes.blockSize, cacheBytesPerClass, magazine);
        // 0 when nothing is cached: size 0 then maps to class 0, whose empty magazine sends the
        // request to the slow path (-1 would let every size through the unsigned compare).
        maxCachedSize = cached == 0 ? 0 : classes.blockSize[cached - 1];
    }

    private static long capacity(SizeClassTable classes, int c, int cacheBlocks, long cacheBytesPerClass) {
        return Math.min(cacheBlocks, cacheBytesPerClass / classes.blockSize[c]);
    }
}
