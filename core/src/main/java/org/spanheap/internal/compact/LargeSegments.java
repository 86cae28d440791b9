package org.spanheap.internal.compact;

import org.spanheap.SpanHeapOutOfMemoryError;

/**
 * Large objects of at most {@link #MAX_OBJECT} bytes as runs of {@value #GRANULE_SHIFT}-bit
 * (64 KiB) granules in segments of 32 MiB that stay mapped. A mapping of its own per object
 * costs an {@code mmap}, a page fault per 4 KiB on first touch and an {@code munmap}, which
 * takes the process's address-space lock for writing (every other thread's page fault waits)
 * and flushes the TLB of every core that runs one of its threads. A run reused here costs none
 * of them: this is how malloc serves its medium blocks.
 *
 * <p>Each segment has three bitmaps: {@code used} (granules of live or not yet released
 * objects), {@code resident} (granules that may hold memory and non-zero bytes: touched since
 * the segment was mapped or since they were last given back) and {@code lazy} (free granules
 * given back lazily, {@link OsMemory#releaseLazily}: the OS takes their memory only when it
 * needs it, so until then they hold it and their bytes are undefined), and, per granule, when
 * it was last freed or given back lazily. Allocation is first fit over the runs whose granules
 * are all resident, then over those all resident or lazy, then over all free runs: a run
 * reused costs no page fault, and the low granules fill first. Free resident granules stay
 * committed until {@link #giveBack} returns the excess that has been free for a while, whole
 * 2 MiB chunks first (a chunk is a huge page where the OS backs the segment with them, and a
 * whole chunk given back does not split one); it gives them back lazily, and
 * {@link #purgeLazy} releases for good those still lazy after {@link #LAZY_PURGE_NANOS}. One
 * wholly empty segment is kept; a second one is unmapped.
 *
 * <p>Why lazily: under a churn of large values the excess given back is taken again within
 * milliseconds, and a run given back with {@code MADV_DONTNEED} costs a page fault per 4 KiB
 * when it is (on the cache churn, 88% of the heap's faults were such runs:
 * docs/decisions.md). A lazy granule reused costs none while the OS has not needed its memory.
 *
 * <p>Not thread-safe: every method but {@link #purgeDue} (a racy hint) runs under
 * {@link LargeObjects#lock}. The byte counters are volatile for racy readers (statistics, pacing).
 */
final class LargeSegments {

    static final int GRANULE_SHIFT = 16;
    static final long GRANULE = 1L << GRANULE_SHIFT;
    static final int GRANULES = 512;
    static final long SEGMENT = GRANULE * GRANULES;
    /** Largest object kept in segments: 4 MiB, an eighth of a segment. */
    static final long MAX_OBJECT = 4L << 20;
    /** Granules per chunk given back to the OS at once: 2 MiB. */
    static final int CHUNK_GRANULES = 32;
    private static final int WORDS = GRANULES / 64;

    private static final class Segment {
        final long base;
        final long[] used = new long[WORDS];
        final long[] resident = new long[WORDS];
        final long[] lazy = new long[WORDS];
        /** {@code System.nanoTime()} when each granule was last freed, or given back lazily (meaningful while free). */
        final long[] freedAt = new long[GRANULES];
        int usedGranules;

        Segment(long base) {
            this.base = base;
        }

        boolean isUsed(int g) {
            return (used[g >>> 6] & 1L << g) != 0;
        }

        boolean isResident(int g) {
            return (resident[g >>> 6] & 1L << g) != 0;
        }

        boolean isLazy(int g) {
            return (lazy[g >>> 6] & 1L << g) != 0;
        }
    }

    private Segment[] segments = new Segment[0];
    /** The ranges a give-back or a purge releases, lazily or at once: one system call per batch, flushed before it returns. */
    private final ReleaseBatch lazyReleases = new ReleaseBatch(true), releases = new ReleaseBatch(false);
    /** Bytes of granules in use (live objects and freed ones not yet released). */
    private volatile long usedBytes;
    /** Bytes of resident granules, used or free: what segments add to the committed bytes. */
    private volatile long residentBytes;
    /** Bytes given back to the OS so far (madvised or unmapped): a counter that only grows. */
    private volatile long releasedBytes;
    /** Bytes of lazy granules: given back, but held until the OS needs them or a purge. */
    private volatile long lazyBytes;
    /** When the oldest lazy granule becomes due for {@link #purgeLazy} ({@code System.nanoTime()}); meaningful while {@link #lazyBytes} is above 0. */
    private volatile long purgeDueAt;

    /**
     * How long a granule stays lazy before {@link #purgeLazy} releases it for good: 100 ms. On
     * the cache churn the lazy granules taken again are taken within that time (1 s saved few
     * more page faults and held about twice the memory: docs/decisions.md).
     */
    static final long LAZY_PURGE_NANOS = 100_000_000L;

    /** {@return whether an object of {@code size} bytes goes in a segment} */
    static boolean fits(long size) {
        return size <= MAX_OBJECT;
    }

    private static int granules(long size) {
        return (int) ((size + GRANULE - 1) >>> GRANULE_SHIFT);
    }

    long usedBytes() {
        return usedBytes;
    }

    long residentBytes() {
        return residentBytes;
    }

    long releasedBytes() {
        return releasedBytes;
    }

    long lazyBytes() {
        return lazyBytes;
    }

    /** Bytes of address space the segments map, resident or not. */
    long mappedBytes() {
        return (long) segments.length * SEGMENT;
    }

    /** Bytes held for {@code size} bytes of object: whole granules. */
    static long heldSize(long size) {
        return (long) granules(size) << GRANULE_SHIFT;
    }

    /**
     * Takes a run for an object of {@code size} bytes ({@link #fits}); {@return its address, with
     * bit 0 set if the run may hold non-zero bytes} (a run of granules never touched, or given
     * back since, reads as zero). Maps a new segment if no segment has room.
     *
     * @throws SpanHeapOutOfMemoryError if a new segment is needed and the OS refuses it
     */
    long take(long size) {
        int n = granules(size);
        for (int pass = 0; pass < 3; pass++) { // resident runs first, then lazy ones: no page faults
            for (Segment s : segments) {
                if (GRANULES - s.usedGranules >= n) {
                    int at = firstFreeRun(s, n, pass);
                    if (at >= 0) {
                        return mark(s, at, n);
                    }
                }
            }
        }
        Segment s = new Segment(OsMemory.map(SEGMENT));
        Segment[] grown = java.util.Arrays.copyOf(segments, segments.length + 1);
        grown[segments.length] = s;
        segments = grown;
        return mark(s, 0, n);
    }

    /**
     * The first run of {@code n} free granules of {@code s}: with {@code pass} 0 all of them
     * resident, with 1 each resident or lazy, with 2 any; -1 if none.
     */
    private static int firstFreeRun(Segment s, int n, int pass) {
        int run = 0;
        for (int g = 0; g < GRANULES; g++) {
            if (s.isUsed(g) || pass == 0 && !s.isResident(g) || pass == 1 && !s.isResident(g) && !s.isLazy(g)) {
                run = 0;
            } else if (++run == n) {
                return g - n + 1;
            }
        }
        return -1;
    }

    private long mark(Segment s, int at, int n) {
        boolean dirty = false;
        int fresh = 0, lazyTaken = 0;
        for (int g = at; g < at + n; g++) {
            s.used[g >>> 6] |= 1L << g;
            if (s.isResident(g)) {
                dirty = true;
            } else {
                if (s.isLazy(g)) {
                    s.lazy[g >>> 6] &= ~(1L << g);
                    lazyTaken++;
                    dirty = true; // its old bytes, or zero if the OS took its memory
                }
                s.resident[g >>> 6] |= 1L << g;
                fresh++;
            }
        }
        s.usedGranules += n;
        usedBytes += (long) n << GRANULE_SHIFT;
        residentBytes += (long) fresh << GRANULE_SHIFT;
        lazyBytes -= (long) lazyTaken << GRANULE_SHIFT;
        long address = s.base + ((long) at << GRANULE_SHIFT);
        return dirty ? address | 1 : address;
    }

    /**
     * Gives back the run of an object of {@code size} bytes at {@code address} (released, or
     * never published). A segment left empty is unmapped if another empty one is kept.
     *
     * @throws IllegalStateException if no segment holds the address (a bug of the caller)
     */
    void give(long address, long size) {
        int n = granules(size);
        long now = System.nanoTime();
        for (int i = 0; i < segments.length; i++) {
            Segment s = segments[i];
            if (address >= s.base && address < s.base + SEGMENT) {
                int at = (int) ((address - s.base) >>> GRANULE_SHIFT);
                for (int g = at; g < at + n; g++) {
                    s.used[g >>> 6] &= ~(1L << g);
                    s.freedAt[g] = now;
                }
                s.usedGranules -= n;
                usedBytes -= (long) n << GRANULE_SHIFT;
                if (s.usedGranules == 0 && otherEmpty(s)) {
                    unmap(i);
                }
                return;
            }
        }
        throw new IllegalStateException("no large segment holds 0x" + Long.toHexString(address));
    }

    private boolean otherEmpty(Segment s) {
        for (Segment o : segments) {
            if (o != s && o.usedGranules == 0) {
                return true;
            }
        }
        return false;
    }

    private void unmap(int i) {
        Segment s = segments[i];
        long resident = 0, lazy = 0;
        for (int w = 0; w < WORDS; w++) {
            resident += Long.bitCount(s.resident[w]);
            lazy += Long.bitCount(s.lazy[w]);
        }
        OsMemory.unmap(s.base, SEGMENT);
        residentBytes -= resident << GRANULE_SHIFT;
        lazyBytes -= lazy << GRANULE_SHIFT;
        releasedBytes += resident << GRANULE_SHIFT;
        Segment[] rest = new Segment[segments.length - 1];
        System.arraycopy(segments, 0, rest, 0, i);
        System.arraycopy(segments, i + 1, rest, i, rest.length - i);
        segments = rest;
    }

    /**
     * Gives free resident granules back until at most {@code keepBytes} of them are left,
     * however recently freed, at once ({@code MADV_DONTNEED}); with {@code keepBytes} 0 the lazy
     * ones too (a trim: the memory leaves the process now). {@return the bytes given back}
     */
    long giveBack(long keepBytes) {
        long given = giveBack(keepBytes, 0, System.nanoTime(), false);
        if (keepBytes == 0) {
            purgeLazy(Long.MAX_VALUE);
        }
        return given;
    }

    /**
     * Gives free resident granules back to the OS until at most {@code keepBytes} of them are
     * left, only granules free for at least {@code minAgeNanos} at {@code now}: a churn takes
     * its runs again within moments, and a granule given back and taken again costs a page
     * fault per 4 KiB. Wholly free 2 MiB chunks first, then free runs of granules, both from
     * the top of the last segment down, since first fit takes the low granules first. They go
     * lazily where the OS allows it (they become lazy: see the class comment).
     * {@return the bytes given back}
     */
    long giveBack(long keepBytes, long minAgeNanos, long now) {
        return giveBack(keepBytes, minAgeNanos, now, true);
    }

    private long giveBack(long keepBytes, long minAgeNanos, long now, boolean lazily) {
        long before = residentBytes;
        try {
            giveBackRuns(keepBytes, minAgeNanos, now, lazily);
        } finally {
            lazyReleases.flush();
            releases.flush();
        }
        return before - residentBytes;
    }

    private void giveBackRuns(long keepBytes, long minAgeNanos, long now, boolean lazily) {
        for (int i = segments.length - 1; i >= 0; i--) {
            Segment s = segments[i];
            for (int c = GRANULES - CHUNK_GRANULES; c >= 0 && residentBytes - usedBytes > keepBytes; c -= CHUNK_GRANULES) {
                if (chunkFree(s, c) && chunkResident(s, c) > 0 && idleSince(s, c, CHUNK_GRANULES, now - minAgeNanos)) {
                    release(s, c, CHUNK_GRANULES, lazily, now);
                }
            }
        }
        for (int i = segments.length - 1; i >= 0; i--) {
            Segment s = segments[i];
            for (int g = GRANULES - 1; g >= 0 && residentBytes - usedBytes > keepBytes; g--) {
                if (idleGranule(s, g, now - minAgeNanos)) {
                    int start = g;
                    while (start > 0 && idleGranule(s, start - 1, now - minAgeNanos)) {
                        start--;
                    }
                    release(s, start, g - start + 1, lazily, now);
                    g = start;
                }
            }
        }
    }

    private static boolean idleGranule(Segment s, int g, long freedBefore) {
        return !s.isUsed(g) && s.isResident(g) && s.freedAt[g] - freedBefore <= 0;
    }

    /** Whether the resident granules of {@code [at, at + n)} (all free) were freed before {@code freedBefore}. */
    private static boolean idleSince(Segment s, int at, int n, long freedBefore) {
        for (int g = at; g < at + n; g++) {
            if (s.isResident(g) && s.freedAt[g] - freedBefore > 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean chunkFree(Segment s, int c) {
        return (s.used[c >>> 6] >>> (c & 63) & 0xFFFF_FFFFL) == 0;
    }

    private static int chunkResident(Segment s, int c) {
        return Long.bitCount(s.resident[c >>> 6] >>> (c & 63) & 0xFFFF_FFFFL);
    }

    /**
     * Gives granules {@code [at, at + n)} of {@code s} (none used) back to the OS: lazily (they
     * become lazy, given back at {@code now}) if {@code lazily} and the OS offers it, else at once
     * (lazy ones among them too). The range joins a batch that the caller flushes; should the
     * OS refuse {@code MADV_FREE} only then, the granules marked lazy are released for good,
     * which a lazy granule allows (it reads as its old bytes or as zero, and is zeroed when
     * taken).
     */
    private void release(Segment s, int at, int n, boolean lazily, long now) {
        long address = s.base + ((long) at << GRANULE_SHIFT), bytes = (long) n << GRANULE_SHIFT;
        boolean lazy = lazily && OsMemory.releasesLazily();
        (lazy ? lazyReleases : releases).add(address, bytes);
        int resident = 0, lazyDelta = 0;
        for (int g = at; g < at + n; g++) {
            if (s.isResident(g)) {
                resident++;
                s.resident[g >>> 6] &= ~(1L << g);
                if (lazy) { // it held memory: now the OS may take it
                    s.lazy[g >>> 6] |= 1L << g;
                    s.freedAt[g] = now;
                    lazyDelta++;
                }
            } else if (!lazy && s.isLazy(g)) { // released at once now
                s.lazy[g >>> 6] &= ~(1L << g);
                lazyDelta--;
            }
        }
        if (lazyDelta > 0 && lazyBytes == 0) {
            purgeDueAt = now + LAZY_PURGE_NANOS;
        }
        residentBytes -= (long) resident << GRANULE_SHIFT;
        releasedBytes += (long) resident << GRANULE_SHIFT;
        lazyBytes += (long) lazyDelta << GRANULE_SHIFT;
    }

    /** {@return whether a lazy granule has been lazy for {@link #LAZY_PURGE_NANOS} at {@code now}} A racy hint. */
    boolean purgeDue(long now) {
        return lazyBytes > 0 && now - purgeDueAt >= 0;
    }

    /**
     * Releases for good ({@code MADV_DONTNEED}) the lazy granules given back at or before
     * {@code givenBefore}, so that memory the heap no longer wants leaves the process even when
     * the OS has not needed it. {@return the bytes released}
     */
    long purgeLazy(long givenBefore) {
        long before = lazyBytes;
        try {
            purgeLazyRuns(givenBefore);
        } finally {
            releases.flush();
        }
        return before - lazyBytes;
    }

    private void purgeLazyRuns(long givenBefore) {
        boolean left = false;
        long oldestLeft = 0;
        for (Segment s : segments) {
            for (int g = 0; g < GRANULES; g++) {
                if (!s.isLazy(g)) {
                    continue;
                }
                if (givenBefore != Long.MAX_VALUE && s.freedAt[g] - givenBefore > 0) {
                    if (!left || s.freedAt[g] - oldestLeft < 0) { // nanoTime: compared by difference
                        oldestLeft = s.freedAt[g];
                        left = true;
                    }
                    continue;
                }
                int start = g;
                while (g + 1 < GRANULES && s.isLazy(g + 1)
                        && (givenBefore == Long.MAX_VALUE || s.freedAt[g + 1] - givenBefore <= 0)) {
                    g++;
                }
                releases.add(s.base + ((long) start << GRANULE_SHIFT), (long) (g - start + 1) << GRANULE_SHIFT);
                for (int k = start; k <= g; k++) {
                    s.lazy[k >>> 6] &= ~(1L << k);
                }
                lazyBytes -= (long) (g - start + 1) << GRANULE_SHIFT;
            }
        }
        if (left) {
            purgeDueAt = oldestLeft + LAZY_PURGE_NANOS;
        }
    }

    /**
     * Checks that the byte counters match the bitmaps and that no granule is in two states at
     * once (used and lazy, resident and lazy); throws {@link AssertionError} if not. For tests.
     */
    void checkConsistent() {
        long used = 0, resident = 0, lazy = 0;
        for (Segment s : segments) {
            int segmentUsed = 0;
            for (int w = 0; w < WORDS; w++) {
                if ((s.lazy[w] & (s.used[w] | s.resident[w])) != 0) {
                    throw new AssertionError("a lazy granule is also used or resident in segment 0x"
                            + Long.toHexString(s.base));
                }
                if ((s.used[w] & ~s.resident[w]) != 0) {
                    throw new AssertionError("a used granule is not resident in segment 0x" + Long.toHexString(s.base));
                }
                segmentUsed += Long.bitCount(s.used[w]);
                resident += Long.bitCount(s.resident[w]);
                lazy += Long.bitCount(s.lazy[w]);
            }
            if (segmentUsed != s.usedGranules) {
                throw new AssertionError("used granules " + segmentUsed + " counted " + s.usedGranules);
            }
            used += segmentUsed;
        }
        if (used << GRANULE_SHIFT != usedBytes || resident << GRANULE_SHIFT != residentBytes
                || lazy << GRANULE_SHIFT != lazyBytes) {
            throw new AssertionError("counters " + usedBytes + "/" + residentBytes + "/" + lazyBytes + " against bitmaps "
                    + (used << GRANULE_SHIFT) + "/" + (resident << GRANULE_SHIFT) + "/" + (lazy << GRANULE_SHIFT));
        }
    }

    /**
     * Adds the segments' resident and lazy granules to {@code ranges} (to ask the OS which pages
     * are in RAM: a lazy granule's are until the OS needs them).
     */
    void addRanges(MemoryRanges ranges) {
        for (Segment s : segments) {
            for (int g = 0; g < GRANULES; g++) {
                if (s.isResident(g) || s.isLazy(g)) {
                    ranges.add(s.base + ((long) g << GRANULE_SHIFT), GRANULE);
                }
            }
        }
    }

    /** Unmaps every segment (the heap closes: no object in them is reachable any more). */
    void unmapAll() {
        while (segments.length > 0) {
            unmap(segments.length - 1);
        }
        usedBytes = 0;
    }
}
