package org.spanheap.internal.compact;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Address ranges collected to ask the OS which of their pages are in RAM
 * ({@link CompactFitHeap#residentBytes}): collected under the heap's locks, asked
 * after them, sorted and with touching ranges joined, so that the pages of one span
 * (fifteen 64 KiB pages side by side) cost one system call, not fifteen. Not
 * thread-safe: one caller fills and asks.
 */
final class MemoryRanges {

    private long[] starts = new long[64];
    private long[] lengths = new long[64];
    private int count;

    /** Adds {@code [address, address + length)}; both page-aligned. */
    void add(long address, long length) {
        if (count == starts.length) {
            starts = Arrays.copyOf(starts, count * 2);
            lengths = Arrays.copyOf(lengths, count * 2);
        }
        starts[count] = address;
        lengths[count] = length;
        count++;
    }

    /**
     * {@return the bytes of all ranges in RAM now} (see {@link OsMemory#residentBytes}). A range
     * given back since it was added counts 0 if unmapped or released, and whatever is there if
     * its addresses were mapped again meanwhile: a snapshot, not an exact figure. A run of
     * touching ranges is asked about at once; if a part of it is no longer mapped, each range
     * is asked about alone.
     */
    long residentBytes() {
        int[] byStart = sortedByStart();
        long resident = 0;
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment vector = scratch.allocate(OsMemory.RESIDENCY_VECTOR_BYTES);
            int i = 0;
            while (i < count) {
                long start = starts[byStart[i]];
                long end = start + lengths[byStart[i]];
                int j = i + 1;
                while (j < count && starts[byStart[j]] == end) { // touching: one call
                    end += lengths[byStart[j]];
                    j++;
                }
                long run = OsMemory.residentBytes(start, end - start, vector);
                if (run < 0) { // a range given back meanwhile: ask about each alone, so the others still count
                    run = 0;
                    for (int k = i; k < j; k++) {
                        run += Math.max(0, OsMemory.residentBytes(starts[byStart[k]], lengths[byStart[k]], vector));
                    }
                }
                resident += run;
                i = j;
            }
        }
        return resident;
    }

    /** Indices of the ranges in the order of their starts. */
    private int[] sortedByStart() {
        Integer[] boxed = new Integer[count];
        for (int i = 0; i < count; i++) {
            boxed[i] = i;
        }
        Arrays.sort(boxed, (a, b) -> Long.compareUnsigned(starts[a], starts[b]));
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = boxed[i];
        }
        return out;
    }
}
