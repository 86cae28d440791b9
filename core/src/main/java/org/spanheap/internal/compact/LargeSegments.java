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
 * <p>Each segment has two bitmaps: {@code used} (granules of live or not yet released objects)
 * and {@code resident} (granules that may hold memory and non-zero bytes: touched since the
 * segment was mapped or since they were last given back) and, per granule, when it was
 * last freed. Allocation is first fit over the
 * runs whose granules are all resident, then over all free runs: a run reused costs no page
 * fault, and the low granules fill first. Free resident granules stay committed until
 * {@link #giveBack} returns the excess that has been free for a while to the OS, whole 2 MiB
 * chunks first (a chunk is a huge
 * page where the OS backs the segment with them, and a whole chunk given back does not split
 * one). One wholly empty segment is kept; a second one is unmapped.
 *
 * <p>Not thread-safe: every method runs under {@link LargeObjects#lock}. The byte counters are
 * volatile for racy readers (statistics, pacing).
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
        /** {@code System.nanoTime()} when each granule was last freed (meaningful while free and resident). */
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
    }

    private Segment[] segments = new Segment[0];
    /** Bytes of granules in use (live objects and freed ones not yet released). */
    private volatile long usedBytes;
    /** Bytes of resident granules, used or free: what segments add to the committed bytes. */
    private volatile long residentBytes;
    /** Bytes given back to the OS so far (madvised or unmapped): a counter that only grows. */
    private volatile long releasedBytes;

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
        for (int pass = 0; pass < 2; pass++) { // resident runs first: no page faults
            for (Segment s : segments) {
                if (GRANULES - s.usedGranules >= n) {
                    int at = firstFreeRun(s, n, pass == 0);
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

    /** The first run of {@code n} free granules of {@code s}, all of them resident if {@code resident}; -1 if none. */
    private static int firstFreeRun(Segment s, int n, boolean resident) {
        int run = 0;
        for (int g = 0; g < GRANULES; g++) {
            if (s.isUsed(g) || resident && !s.isResident(g)) {
                run = 0;
            } else if (++run == n) {
                return g - n + 1;
            }
        }
        return -1;
    }

    private long mark(Segment s, int at, int n) {
        boolean dirty = false;
        int fresh = 0;
        for (int g = at; g < at + n; g++) {
            s.used[g >>> 6] |= 1L << g;
            if (s.isResident(g)) {
                dirty = true;
            } else {
                s.resident[g >>> 6] |= 1L << g;
                fresh++;
            }
        }
        s.usedGranules += n;
        usedBytes += (long) n << GRANULE_SHIFT;
        residentBytes += (long) fresh << GRANULE_SHIFT;
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
        long resident = 0;
        for (long w : s.resident) {
            resident += Long.bitCount(w);
        }
        OsMemory.unmap(s.base, SEGMENT);
        residentBytes -= resident << GRANULE_SHIFT;
        releasedBytes += resident << GRANULE_SHIFT;
        Segment[] rest = new Segment[segments.length - 1];
        System.arraycopy(segments, 0, rest, 0, i);
        System.arraycopy(segments, i + 1, rest, i, rest.length - i);
        segments = rest;
    }

    /** {@link #giveBack(long, long, long)} of every free resident granule, however recently freed. */
    long giveBack(long keepBytes) {
        return giveBack(keepBytes, 0, System.nanoTime());
    }

    /**
     * Gives free resident granules back to the OS until at most {@code keepBytes} of them are
     * left, only granules free for at least {@code minAgeNanos} at {@code now}: a churn takes
     * its runs again within moments, and a granule given back and taken again costs a page
     * fault per 4 KiB. Wholly free 2 MiB chunks first, then free runs of granules, both from
     * the top of the last segment down, since first fit takes the low granules first.
     * {@return the bytes given back}
     */
    long giveBack(long keepBytes, long minAgeNanos, long now) {
        long before = residentBytes;
        for (int i = segments.length - 1; i >= 0; i--) {
            Segment s = segments[i];
            for (int c = GRANULES - CHUNK_GRANULES; c >= 0 && residentBytes - usedBytes > keepBytes; c -= CHUNK_GRANULES) {
                if (chunkFree(s, c) && chunkResident(s, c) > 0 && idleSince(s, c, CHUNK_GRANULES, now - minAgeNanos)) {
                    release(s, c, CHUNK_GRANULES);
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
                    release(s, start, g - start + 1);
                    g = start;
                }
            }
        }
        return before - residentBytes;
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

    /** Gives granules {@code [at, at + n)} of {@code s} (none used) back to the OS. */
    private void release(Segment s, int at, int n) {
        int resident = 0;
        for (int g = at; g < at + n; g++) {
            if (s.isResident(g)) {
                resident++;
                s.resident[g >>> 6] &= ~(1L << g);
            }
        }
        OsMemory.release(s.base + ((long) at << GRANULE_SHIFT), (long) n << GRANULE_SHIFT);
        residentBytes -= (long) resident << GRANULE_SHIFT;
        releasedBytes += (long) resident << GRANULE_SHIFT;
    }

    /** Adds the segments' resident granules to {@code ranges} (to ask the OS which pages are in RAM). */
    void addRanges(MemoryRanges ranges) {
        for (Segment s : segments) {
            for (int g = 0; g < GRANULES; g++) {
                if (s.isResident(g)) {
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
