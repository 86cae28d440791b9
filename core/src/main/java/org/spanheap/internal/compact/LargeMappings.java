package org.spanheap.internal.compact;

/**
 * Mappings of reclaimed large objects kept for the next large objects, as
 * malloc keeps freed chunks: a fresh mapping costs a page fault per 4 KiB on
 * first touch, and under churn large objects come and go all the time (in the
 * churn benchmark they caused most of the heap's page faults). Best fit; the
 * unused tail of a larger mapping is unmapped. Bounded in bytes by the caller;
 * the cached bytes count as committed (they stay resident). Guarded by this.
 * Keeps nothing where {@link OsMemory#MAPS} is false (no {@code mremap}, no
 * partial {@code munmap}): malloc keeps its freed memory itself.
 */
final class LargeMappings {

    private long[] addresses = new long[16];
    private long[] sizes = new long[16];
    private int count;
    private long bytes;
    /**
     * Bytes unmapped by {@link #give} and {@link #drain} so far, for the MemoryRelease event; the
     * tails {@link #take} cuts off are not counted (they go on an allocating thread, not in a round).
     */
    private long unmappedBytes;

    /** {@return the bytes unmapped by give and drain so far: a counter that only grows} */
    synchronized long unmappedBytes() {
        return unmappedBytes;
    }

    /** Bytes held for reuse. */
    synchronized long bytes() {
        return bytes;
    }

    /**
     * Returns the address of a mapping of exactly {@code OsMemory.mappedSize(size)}
     * bytes made from the cache (dirty: not zeroed), or 0 if the cache is empty
     * or the OS refused to grow the mapping chosen.
     * Best fit; the unused tail of a larger mapping is unmapped; if none is
     * large enough, the largest grows (only its new tail will fault in).
     */
    synchronized long take(long size) {
        if (count == 0) {
            return 0;
        }
        long need = OsMemory.mappedSize(size);
        int best = -1, largest = 0;
        for (int i = 0; i < count; i++) {
            if (sizes[i] >= need && (best < 0 || sizes[i] < sizes[best])) {
                best = i;
            }
            if (sizes[i] > sizes[largest]) {
                largest = i;
            }
        }
        int pick = best >= 0 ? best : largest;
        long address = addresses[pick], have = sizes[pick];
        if (have < need) {
            try {
                address = OsMemory.grow(address, have, need);
            } catch (OutOfMemoryError refused) {
                return 0; // the cache keeps it unchanged; the caller maps afresh (which may succeed)
            }
        }
        count--;
        System.arraycopy(addresses, pick + 1, addresses, pick, count - pick); // keeps the age order
        System.arraycopy(sizes, pick + 1, sizes, pick, count - pick);
        bytes -= have;
        if (have > need) {
            OsMemory.unmap(address + need, have - need); // the tail goes back
        }
        return address;
    }

    /**
     * Keeps a reclaimed mapping, unmapping the oldest kept ones while the
     * cache would exceed {@code capBytes} (the newest are the likeliest to be
     * hot in the caches); a mapping larger than the cap itself is unmapped.
     */
    synchronized void give(long address, long mapped, long capBytes) {
        if (mapped > capBytes || !OsMemory.MAPS) { // without mmap: a malloc block, freed (see OsMemory)
            OsMemory.unmap(address, mapped);
            unmappedBytes += mapped;
            return;
        }
        while (bytes + mapped > capBytes) {
            OsMemory.unmap(addresses[0], sizes[0]);
            unmappedBytes += sizes[0];
            bytes -= sizes[0];
            count--;
            System.arraycopy(addresses, 1, addresses, 0, count);
            System.arraycopy(sizes, 1, sizes, 0, count);
        }
        if (count == addresses.length) {
            addresses = java.util.Arrays.copyOf(addresses, count * 2);
            sizes = java.util.Arrays.copyOf(sizes, count * 2);
        }
        addresses[count] = address;
        sizes[count] = mapped;
        count++;
        bytes += mapped;
    }

    /** Adds the mappings held to {@code ranges} (to ask the OS which of their pages are in RAM). */
    synchronized void addRanges(MemoryRanges ranges) {
        for (int i = 0; i < count; i++) {
            ranges.add(addresses[i], sizes[i]);
        }
    }

    /** Unmaps everything held. */
    synchronized void drain() {
        for (int i = 0; i < count; i++) {
            OsMemory.unmap(addresses[i], sizes[i]);
            unmappedBytes += sizes[i];
        }
        count = 0;
        bytes = 0;
    }
}
