package org.spanheap.internal.compact;

import org.spanheap.CompactingHeapStats;

/**
 * What a heap holds, counted: the statistics' snapshot and the ranges whose residency the OS
 * is asked for. Reads only; the caller holds {@link Rounds#lock}, so no round releases or
 * gives back memory while it counts, and it takes each class's lock in turn.
 */
final class HeapCensus {

    private final HandleTable table;
    private final SizeClassPages[] classes;
    private final int sizeClassCount;
    private final long pageSize;
    private final PageReserve source;
    private final Limbo limbo;
    private final LaneLimbo laneLimbo;
    private final PendingSlots pendingSlots;
    private final PageOwnership ownership;
    private final LargeObjects large;

    HeapCensus(HandleTable table, SizeClassPages[] classes, int sizeClassCount, long pageSize, PageReserve source,
            Limbo limbo, LaneLimbo laneLimbo, PendingSlots pendingSlots, PageOwnership ownership, LargeObjects large) {
        this.table = table;
        this.classes = classes;
        this.sizeClassCount = sizeClassCount;
        this.pageSize = pageSize;
        this.source = source;
        this.limbo = limbo;
        this.laneLimbo = laneLimbo;
        this.pendingSlots = pendingSlots;
        this.ownership = ownership;
        this.large = large;
    }

    /**
     * The statistics (caller holds the round lock and the ownership's monitor, so that no
     * terminated thread's pages are half given up while it counts).
     */
    CompactingHeapStats count(Rounds rounds, Epochs epochs) {
        long pendingObjects = 0, pendingBytes = 0, pendingLarge = 0;
        for (int s = 0; s < Limbo.STRIPES; s++) {
            for (int i = limbo.peek(s); i != HandleTable.NO_INDEX; i = table.link(i)) {
                pendingObjects++;
                pendingBytes += HandleTable.size(table.stateAcquire(i));
                if (table.pageOf(i) == null) {
                    pendingLarge++;
                }
            }
        }
        long[] lanePending = new long[2];
        for (SizeClassPages c : classes) {
            if (c.reuseReady) {
                laneLimbo.addPending(c.index, lanePending);
            }
        }
        long[] ready = new long[2];
        int[] notFull = new int[sizeClassCount];
        long blockBytes = 0, pages = 0, frag = 0, objects = 0, bytes = 0;
        for (SizeClassPages c : classes) {
            c.lock.lock();
            try {
                c.ready.addPending(table, ready); // reclaimed, counted live in their lane until reused
                blockBytes += c.liveBlocks * c.blockSize;
                pages += c.pageCount();
                frag += c.fragmentationBytes();
                notFull[c.sizeClass] += c.notFullCount();
                objects += c.allocated - c.released;
                bytes += c.allocatedBytes - c.releasedBytes;
            } finally {
                c.lock.unlock();
            }
        }
        objects -= ready[0];
        bytes -= ready[1];
        long[] owned = new long[7];
        ownership.addCounters(owned);
        long[] waiting = new long[2];
        pendingSlots.addCounters(waiting);
        pendingObjects += waiting[0] + lanePending[0];
        pendingBytes += waiting[1] + lanePending[1];
        objects += owned[0] - owned[2];
        bytes += owned[1] - owned[3];
        pendingObjects += owned[4];
        pendingBytes += owned[5];
        blockBytes += owned[6];
        long largeObjects, largeBytes = large.heldBytes();
        large.lock.lock();
        try {
            largeObjects = large.allocated - large.released;
            objects += largeObjects;
            bytes += large.allocatedBytes - large.releasedBytes;
        } finally {
            large.lock.unlock();
        }
        return new CompactingHeapStats(bytes - pendingBytes, objects - pendingObjects, blockBytes + largeBytes,
                source.committedBytes() + large.committedBytes(), pages, largeObjects - pendingLarge, largeBytes,
                notFull, frag,
                pendingBytes, rounds.movedBytes, rounds.increments, epochs.closedCount, rounds.maxIncrementNanos,
                rounds.totalIncrementNanos, epochs.maxCloseNanos);
    }

    /**
     * The ranges of the heap's memory (caller holds the round lock, so that none of them is
     * given back while it looks): pages of the classes and the reserve, large segments, and
     * large objects live or freed and waiting in the limbo (mapped until a round releases them).
     */
    MemoryRanges ranges() {
        MemoryRanges ranges = new MemoryRanges();
        for (SizeClassPages c : classes) {
            c.lock.lock();
            try {
                for (int i = 0, n = c.pageCount(); i < n; i++) {
                    ranges.add(c.pageAt(i).base, pageSize);
                }
            } finally {
                c.lock.unlock();
            }
        }
        source.addRanges(ranges);
        large.addSegmentRanges(ranges);
        for (int s = 0; s < Limbo.STRIPES; s++) {
            for (int i = limbo.peek(s); i != HandleTable.NO_INDEX; i = table.link(i)) {
                large.addIfLarge(i, ranges);
            }
        }
        for (int i = 1, n = table.capacity(); i < n; i++) {
            if (HandleTable.isLive(table.stateAcquire(i))) {
                large.addIfLarge(i, ranges);
            }
        }
        return ranges;
    }
}
